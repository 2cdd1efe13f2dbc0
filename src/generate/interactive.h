// File: generate/interactive.h
//
// `caphv generate --interactive`: the questions, their defaults and the
// validation of the answers, as pure functions over what the Harvester
// kubeconfig shows (the images with their state, the key pairs, the VM
// networks, the IP pools with their free addresses). The terminal I/O (and
// listing Harvester) is the caller's: it shows Current(), reads a line,
// hands it to Answer() and shows the reason when the answer is refused.
//
// The questions, in order: the Harvester kubeconfig (listing Harvester's
// objects once it is read), the Cluster's name and namespace, the target
// namespace on Harvester, the image, the SSH key pair and user, the VM
// network, the IP pool(s), the gateway, subnet mask and DNS servers, the
// control-plane and worker replicas, CPUs, memory, disk size, Kubernetes
// version and CNI. Each has a default: the flag when it was given on the
// command line, else one derived from Harvester (the first Active image, the
// first key pair and network, the first pool of that network with free
// addresses, the pool's gateway and subnet mask, the SSH user of the image's
// distribution), else the flag's default. An answer is checked as its flag
// is (the same one-line reasons) and against Harvester: an image that exists
// and is Active, a key pair, network and pools that exist, pools holding
// the machines asked for.
//
// Thread safety: pure functions; an Interview is used by one thread.

#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/fields.h"
#include "generate/generate.h"
#include "kube/status.h"

namespace caphv::generate {

// A VirtualMachineImage as offered: "namespace/name", its display name and
// its state as Harvester shows it ("Active", "Importing 40%", "Failed: ...").
struct ImageChoice {
  std::string ref;
  std::string display_name;
  std::string state;
  bool active = false;
};

struct KeyPairChoice {
  std::string ref;
  std::string fingerprint;
};

// A NetworkAttachmentDefinition: "namespace/name" and "VLAN 100" (from its
// CNI config), or "" when it names none.
struct NetworkChoice {
  std::string ref;
  std::string detail;
};

// An IPPool: its free addresses (assignable minus allocated), its network
// (spec.selector.network, "" = any) and, from its first range, the subnet,
// the gateway (only when the range gives one) and the subnet mask.
struct PoolChoice {
  std::string name;
  int64_t free = 0;
  int64_t total = 0;
  std::string network;
  std::string subnet;
  std::string gateway;
  std::string subnet_mask;
};

// What the Harvester kubeconfig shows. `errors` holds, per list that could
// not be read ("images", "key pairs", "networks", "ip pools"), why: its
// question then takes any well-formed answer.
struct Inventory {
  std::string kubeconfig_path;  // as read (~ expanded)
  std::string server;
  std::vector<ImageChoice> images;
  std::vector<KeyPairChoice> key_pairs;
  std::vector<NetworkChoice> networks;
  std::vector<PoolChoice> pools;
  std::map<std::string, std::string> errors;
};

// The state of a VirtualMachineImage as Harvester's UI shows it: "Active"
// once its Imported condition is True, "Failed: <message>" when it is False,
// else "Importing <progress>%".
std::string ImageState(const api::Json& image);

// The choices of listed objects, sorted by namespace/name (pools by name).
// Objects being deleted are left out.
std::vector<ImageChoice> ImageChoices(const std::vector<api::Json>& images);
std::vector<KeyPairChoice> KeyPairChoices(const std::vector<api::Json>& key_pairs);
std::vector<NetworkChoice> NetworkChoices(const std::vector<api::Json>& networks);
std::vector<PoolChoice> PoolChoices(const std::vector<api::Json>& pools);

// The SSH user of the image's distribution, guessed from its name and
// display name (ubuntu, sles, opensuse, rocky, centos, debian, fedora,
// almalinux, rhel -> cloud-user); "" when none matches.
std::string SshUserOfImage(const ImageChoice& image);

// The flags the interview does not ask (--class, --extra-disk, the CNI's
// MTU, encapsulation, BGP and pod CIDR, Fleet), checked before it starts:
// OK, or the one line of Validate.
kube::Status CheckUnaskedFlags(const Options& options);

// One question as the caller shows it: the numbered choices (may be
// empty), then "<prompt> [<default>]: ".
struct Question {
  std::string key;     // the flag it answers, without "--": "image"
  std::string prompt;  // "VM image"
  std::vector<std::string> choices;
  std::string default_value;  // "" = none (an answer is required, or "none")
  std::string note;           // a line above the choices ("" = none)
  bool optional = false;      // "none" is an answer (DNS)
};

// The question as text: the note, "  1) ..." per choice, "<prompt> [default]: ".
std::string RenderQuestion(const Question& question);

class Interview {
 public:
  // Reads the Harvester kubeconfig at a path and lists Harvester's objects;
  // a failure (unreadable file, unreachable Harvester) asks the path again
  // with the status's message.
  using Loader = std::function<kube::StatusOr<Inventory>(const std::string& path)>;

  // `prefilled`: the flags; `given`: the flags given on the command line
  // ("--image", ...), whose values are the defaults as they are.
  Interview(Options prefilled, std::set<std::string> given, Loader loader);

  bool Done() const { return step_ >= kSteps.size(); }
  // The current question; only while !Done().
  Question Current() const;
  // Takes the answer to the current question: "" the default, a number the
  // choice of that number, else the value. Returns "" when accepted (the
  // interview moves on), else the one-line reason it is not (the question
  // stays).
  std::string Answer(std::string_view answer);

  const Options& options() const { return options_; }
  const Inventory& inventory() const { return inventory_; }
  // The questions asked, in order (keys): the interview of a run.
  static std::vector<std::string> Keys();

  // The values chosen, as "label: value" lines for the summary.
  std::vector<std::pair<std::string, std::string>> Summary() const;

 private:
  static const std::vector<std::string_view> kSteps;

  std::string DefaultOf(std::string_view key) const;
  std::vector<std::string> ChoicesOf(std::string_view key) const;
  bool Given(std::string_view flag) const { return given_.contains(std::string(flag)); }
  int64_t FreeInChosenPools() const;
  std::vector<std::string> ChosenPools() const;
  // The value of `key` in options_, as text.
  std::string ValueOf(std::string_view key) const;
  // Checks `value` as the flag of `key`; sets it when valid. "" or the reason.
  std::string Set(std::string_view key, const std::string& value);

  Options options_;
  std::set<std::string> given_;
  Loader loader_;
  Inventory inventory_;
  size_t step_ = 0;
};

}  // namespace caphv::generate
