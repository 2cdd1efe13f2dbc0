// File: generate/interactive_answer.cc
//
// How the interview takes an answer (see interactive.h): a number picks a
// choice, the Harvester kubeconfig is read and Harvester listed, the value
// is checked as its flag is (Validate over options valid everywhere else)
// and then against what Harvester holds (an Active image, a key pair,
// network and pools that exist, pools with addresses for the machines);
// and the check of the flags the interview does not ask.

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "generate/interactive.h"
#include "generate/interactive_internal.h"

namespace caphv::generate {
namespace {

using internal::Join;
using internal::kCnis;
using internal::ListName;
using internal::Plural;
using internal::SplitList;
using internal::Trim;

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

// A non-negative integer, or nullopt.
std::optional<int> ParseInt(std::string_view s) {
  int v = 0;
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || s.empty()) return std::nullopt;
  return v;
}

// Options every field of which is valid: one field set on top of it is
// checked by Validate alone.
Options Baseline() {
  Options o;
  o.name = "a";
  o.image = "a/b";
  o.ssh_keypair = "a/b";
  o.network = "a/b";
  o.gateway = "10.0.0.1";
  o.subnet_mask = "255.255.255.0";
  o.ip_pool = "p";
  o.harvester_kubeconfig = "k";
  return o;
}

}  // namespace

kube::Status CheckUnaskedFlags(const Options& options) {
  Options o = options;
  const Options b = Baseline();
  o.name = b.name;
  o.ns.clear();
  o.harvester_kubeconfig = b.harvester_kubeconfig;
  o.target_namespace = b.target_namespace;
  o.image = b.image;
  o.ssh_keypair = b.ssh_keypair;
  o.ssh_user = b.ssh_user;
  o.network = b.network;
  o.ip_pool = b.ip_pool;
  o.ip_pool_refs.clear();
  o.gateway = b.gateway;
  o.subnet_mask = b.subnet_mask;
  o.dns.clear();
  o.cp_replicas = b.cp_replicas;
  o.worker_replicas = b.worker_replicas;
  o.cpu = b.cpu;
  o.memory = b.memory;
  o.disk_size = b.disk_size;
  o.k8s_version = b.k8s_version;
  o.cni = b.cni;
  return Validate(o);
}

std::string Interview::Set(std::string_view key, const std::string& value) {
  Options probe = Baseline();
  Options& o = options_;
  auto apply = [&](Options& t) {
    if (key == "harvester-kubeconfig") t.harvester_kubeconfig = value;
    if (key == "name") t.name = value;
    if (key == "namespace") t.ns = value;
    if (key == "target-namespace") t.target_namespace = value;
    if (key == "image") t.image = value;
    if (key == "ssh-keypair") t.ssh_keypair = value;
    if (key == "ssh-user") t.ssh_user = value;
    if (key == "network") t.network = value;
    if (key == "ip-pool") {
      const auto pools = SplitList(value);
      t.ip_pool = pools.size() == 1 ? pools.front() : "";
      t.ip_pool_refs = pools.size() == 1 ? "" : Join(pools, ",");
      if (pools.empty()) t.ip_pool.clear();
    }
    if (key == "gateway") t.gateway = value;
    if (key == "subnet-mask") t.subnet_mask = value;
    if (key == "dns") t.dns = value;
    if (key == "memory") t.memory = value;
    if (key == "disk-size") t.disk_size = value;
    if (key == "k8s-version") t.k8s_version = value;
    if (key == "cni") t.cni = value;
  };
  const bool numeric = key == "cp-replicas" || key == "worker-replicas" || key == "cpu";
  std::optional<int> number;
  if (numeric) {
    number = ParseInt(value);
    if (!number) return Quote(value) + " is not a number";
    if (key == "cp-replicas") probe.cp_replicas = *number;
    if (key == "worker-replicas") probe.worker_replicas = *number;
    if (key == "cpu") probe.cpu = *number;
  } else {
    apply(probe);
  }
  if (auto s = Validate(probe); !s.ok()) {
    std::string message(s.message());
    const std::string flag = "--" + std::string(key) + ": ";
    const std::string refs = "--ip-pool-refs: ";
    if (message.starts_with(flag)) return message.substr(flag.size());
    if (key == "ip-pool" && message.starts_with(refs)) return message.substr(refs.size());
    if (key == "ip-pool" && message.starts_with("--ip-pool:")) return "required";
    return message;
  }
  if (numeric) {
    if (key == "cp-replicas") o.cp_replicas = *number;
    if (key == "worker-replicas") o.worker_replicas = *number;
    if (key == "cpu") o.cpu = *number;
  } else {
    apply(o);
  }
  return "";
}

std::string Interview::Answer(std::string_view raw) {
  const std::string_view key = kSteps.at(step_);
  const Question q = Current();
  std::string value = Trim(raw);
  if (value.empty()) value = q.default_value;
  if (q.optional && (value == "none" || value == "-")) value.clear();
  if (value.empty() && !q.optional) return "an answer is required";

  // A number picks a choice (a comma-separated list of them for the pools).
  const auto& inv = inventory_;
  auto pick = [&](const std::string& item) -> std::optional<std::string> {
    auto n = ParseInt(item);
    if (!n || q.choices.empty()) return item;
    if (*n < 1 || static_cast<size_t>(*n) > q.choices.size()) return std::nullopt;
    const size_t i = static_cast<size_t>(*n) - 1;
    if (key == "image") return inv.images[i].ref;
    if (key == "ssh-keypair") return inv.key_pairs[i].ref;
    if (key == "network") return inv.networks[i].ref;
    if (key == "ip-pool") return inv.pools[i].name;
    if (key == "cni") return kCnis[i];
    return item;
  };
  std::string out_of_range =
      "choose 1 to " + std::to_string(q.choices.size()) + (key == "cni" ? "" : ", or type a name");
  if (key == "ip-pool") {
    std::vector<std::string> names;
    for (const auto& item : SplitList(value)) {
      auto name = pick(item);
      if (!name) return out_of_range;
      names.push_back(*name);
    }
    value = Join(names, ",");
  } else if (!q.choices.empty()) {
    auto v = pick(value);
    if (!v) return out_of_range;
    value = *v;
  }

  // Harvester's kubeconfig: read it and list Harvester.
  if (key == "harvester-kubeconfig") {
    auto inventory = loader_(value);
    if (!inventory.ok()) return std::string(inventory.status().message());
    inventory_ = std::move(inventory).value();
    value = inventory_.kubeconfig_path.empty() ? value : inventory_.kubeconfig_path;
  }

  // Checked as the flag is.
  if (auto reason = Set(key, value); !reason.empty()) return reason;

  // Checked against Harvester (when its list could be read).
  const bool listed = !ListName(key).empty() && !inv.errors.contains(std::string(ListName(key)));
  auto find_ref = [&](const auto& items, const std::string& ref) -> decltype(&items.front()) {
    for (const auto& i : items) {
      if (i.ref == ref || i.ref == "default/" + ref) return &i;
    }
    return nullptr;
  };
  if (listed && key == "image") {
    const auto* image = find_ref(inv.images, value);
    if (image == nullptr) return "Harvester has no image " + value + " (choose one of the list)";
    if (!image->active) {
      return image->ref + " is not Active (" + image->state + "): choose an Active image";
    }
    options_.image = image->ref;
  } else if (listed && key == "ssh-keypair") {
    const auto* k = find_ref(inv.key_pairs, value);
    if (k == nullptr) return "Harvester has no key pair " + value + " (choose one of the list)";
    options_.ssh_keypair = k->ref;
  } else if (listed && key == "network") {
    const auto* n = find_ref(inv.networks, value);
    if (n == nullptr) return "Harvester has no network " + value + " (choose one of the list)";
    options_.network = n->ref;
  } else if (listed && key == "ip-pool") {
    int64_t free = 0;
    for (const auto& name : ChosenPools()) {
      const auto it = std::find_if(inv.pools.begin(), inv.pools.end(),
                                   [&](const auto& p) { return p.name == name; });
      if (it == inv.pools.end()) {
        return "Harvester has no IP pool " + name + " (choose from the list)";
      }
      if (!it->network.empty() && it->network != options_.network) {
        return name + " serves network " + it->network + ", not " + options_.network;
      }
      free += it->free;
    }
    if (free == 0) {
      return "no free address in " + Join(ChosenPools(), ", ") +
             ": choose a pool with free addresses";
    }
  } else if (key == "cp-replicas" || key == "worker-replicas") {
    const int64_t free = FreeInChosenPools();
    const int64_t cp = options_.cp_replicas;
    const int64_t machines = key == "cp-replicas" ? cp : cp + options_.worker_replicas;
    if (free >= 0 && machines > free) {
      const std::string pools = Join(ChosenPools(), ", ");
      if (key == "cp-replicas") {
        return "the pools (" + pools + ") have " + Plural(free, "free address", "free addresses") +
               ": at most " + std::to_string(free);
      }
      return "the pools (" + pools + ") have " + Plural(free, "free address", "free addresses") +
             " for " + Plural(cp, "control-plane machine", "control-plane machines") +
             ": at most " + std::to_string(std::max<int64_t>(free - cp, 0));
    }
  }
  ++step_;
  return "";
}

}  // namespace caphv::generate
