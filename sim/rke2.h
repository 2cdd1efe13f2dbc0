// File: sim/rke2.h
//
// What RKE2 does on a guest, as pure functions: the simulator reads a VM's
// cloud-init user data the way the guest would run it, finds the RKE2 config
// file (/etc/rancher/rke2/config.yaml) and install command the RKE2
// bootstrap provider writes, decides whether the node may join the cluster,
// and builds what RKE2 and its kubelet write into the workload cluster: the
// Node, its Lease in kube-node-lease, the mirror pods of the control-plane
// static pods and the `kube-system/rke2-serving` Secret.
//
// Formats read: `#cloud-config` (also with the `## template: jinja` header
// the provider puts first; write_files with plain, base64 or gzip+base64
// content; runcmd entries as strings or argv lists), Ignition JSON (files as
// `data:` URLs, plain, percent-encoded or base64, optionally gzip; a
// `ignition.config.replace`/`merge` data URL, which is how the provider
// wraps gzipped user data), and the gzip of either (`gzipUserData: true`).
//
// Join rules (what an RKE2 server answers a joining node): the first server
// is the one without `server:` in its config (the oldest VM when several);
// its `token` is the cluster's (once it is gone, any live server that joined
// serves joins with the same token). Every other node must present that token
// (the full `K10<ca hash>::server:<secret>` form matches on its secret) and
// `server: https://<host>:9345` where host is a registration address: the
// cluster's control-plane endpoint (its load balancer) or a joined server's
// address (registration methods `internal-first` and the like).
//
// Thread safety: pure functions over values.

#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kube/object.h"
#include "kube/status.h"

namespace caphv::sim {

inline constexpr char kRke2ConfigPath[] = "/etc/rancher/rke2/config.yaml";
inline constexpr int kRke2JoinPort = 9345;
inline constexpr char kRke2ServingSecret[] = "rke2-serving";
inline constexpr char kNodeLeaseNamespace[] = "kube-node-lease";
inline constexpr int kLeaseDurationSeconds = 40;
inline constexpr char kEtcdServerCaPath[] = "/var/lib/rancher/rke2/server/tls/etcd/server-ca.crt";
inline constexpr char kEtcdServerCaKeyPath[] =
    "/var/lib/rancher/rke2/server/tls/etcd/server-ca.key";
// RKE2's etcd member annotations on a server's Node.
inline constexpr char kEtcdNodeNameAnnotation[] = "etcd.rke2.cattle.io/node-name";
inline constexpr char kEtcdNodeAddressAnnotation[] = "etcd.rke2.cattle.io/node-address";
inline constexpr char kEtcdRemoveAnnotation[] = "etcd.rke2.cattle.io/remove";
inline constexpr char kEtcdRemovedNodeNameAnnotation[] = "etcd.rke2.cattle.io/removed-node-name";

// The user data a VM's cloudInitNoCloud volume carries inline (userData or
// userDataBase64), or "".
std::string InlineUserData(const kube::Object& vm);
// The Secret its `secretRef` (or `userDataSecretRef`) names, or "".
std::string UserDataSecretName(const kube::Object& vm);
// The user data of a cloud-init Secret (key `userdata`, else `userData`);
// nullopt when it has neither.
std::optional<std::string> UserDataFromSecret(const kube::Object& secret);

// The files and commands a user data sets up on the guest.
struct GuestBoot {
  std::string format;                        // "cloud-config" or "ignition"
  std::map<std::string, std::string> files;  // path -> decoded content
  std::vector<std::string> commands;         // runcmd / install script lines
  std::vector<std::string> packages;         // cloud-config `packages` (names)
};

// kInvalidArgument for data that is neither (or is broken: bad base64, bad gzip).
kube::StatusOr<GuestBoot> ParseUserData(const std::string& user_data);

// gzip (or zlib) data inflated; nullopt when it is not.
std::optional<std::string> Gunzip(std::string_view data);

// The decoded payload of a `data:` URL (RFC 2397); nullopt when malformed.
std::optional<std::string> DecodeDataUrl(std::string_view url);

struct Rke2Config {
  std::string role;     // "server" or "agent"
  std::string version;  // INSTALL_RKE2_VERSION ("" for an air-gapped install)
  std::string token;
  std::string server;  // "" on the first server
  std::string node_name;
  std::string cloud_provider_name;
  bool disable_cloud_controller = false;
  bool etcd = false;                     // a server that runs etcd
  bool control_plane = false;            // a server that runs the apiserver
  std::vector<std::string> node_labels;  // "key=value"
  std::vector<std::string> node_taints;  // "key=value:Effect" or "key:Effect"
  std::vector<std::string> tls_san;
  // The etcd server CA (certificate and key) the bootstrap provider writes
  // onto the cluster's first server (PEM; "" on the others).
  std::string etcd_server_ca;
  std::string etcd_server_ca_key;
  kube::Object config = kube::Object::object();  // config.yaml as parsed
  // A command that runs before RKE2 is installed and reads
  // /proc/sys/crypto/fips_enabled and exits: the guard against an image
  // that does not boot in FIPS mode. cloud-init runs runcmd as one shell
  // script, so the guard's exit ends it there on such an image, RKE2 never
  // installed. "" when there is none; `fips_gate_message` is what the
  // command prints then (its echo), if it says anything.
  std::string fips_gate;
  std::string fips_gate_message;
};

// The RKE2 setup of `user_data`; nullopt when it installs no RKE2 (no
// config file): such a guest is not an RKE2 node. `hostname` replaces the
// cloud-init jinja variables for the instance's host name.
// kInvalidArgument for a config that is not a YAML mapping, or a config
// without any RKE2 install command.
kube::StatusOr<std::optional<Rke2Config>> Rke2FromUserData(const std::string& user_data,
                                                           const std::string& hostname);

// True when a guest booting `user_data` runs qemu-guest-agent: a
// cloud-config that lists the package `qemu-guest-agent` (installing it
// starts it on the distributions Harvester images carry), or a command or
// shell script that installs it with a package manager. Enabling it alone
// does not count: that works only on an image that ships the agent, which
// the environment says (EnvImage::guest_agent).
bool UserDataRunsGuestAgent(const std::string& user_data, const std::string& hostname);

// "v1.31.4+rke2r1" for INSTALL_RKE2_VERSION v1.31.4+rke2r1 (or v1.31.4);
// the default RKE2 release for "".
std::string KubeletVersionFor(const std::string& rke2_version);

// True when the kubelet runs with --cloud-provider=external and waits for a
// cloud controller other than RKE2's own (the Node keeps the uninitialized
// taint until then): `cloud-provider-name` set to anything but "rke2", or
// RKE2's own controller disabled.
bool ExternalCloudProvider(const Rke2Config& c);

// What the cluster looks like to a joining node.
struct Rke2Cluster {
  std::string token;            // the first server's token; "" = no server up yet
  std::string first_server;     // node name of the first server
  std::set<std::string> hosts;  // registration addresses (LB, joined servers)
};

struct JoinDecision {
  bool join = false;
  std::string reason;  // PascalCase, for events; "" when joined
  std::string message;
};
// `is_first`: this node is the cluster's first server.
JoinDecision DecideJoin(const Rke2Config& c, const Rke2Cluster& cluster, bool is_first);

// The Node the kubelet registers (name, labels, taints, annotations RKE2 sets).
kube::Object BuildRke2Node(const std::string& node_name, const Rke2Config& c,
                           const std::string& ip);
// The Lease the kubelet renews; `renew_time` is a MicroTime string.
kube::Object BuildNodeLease(const std::string& node_name, const std::string& node_uid,
                            const std::string& renew_time);
// Names of the static pods RKE2 runs on a server ("kube-apiserver", "etcd", ...).
std::vector<std::string> StaticPodComponents(const Rke2Config& c);
// The mirror pod of a static pod `component` on `node_name`.
kube::Object BuildMirrorPod(const std::string& component, const std::string& node_name,
                            const std::string& node_uid, const std::string& ip,
                            const Rke2Config& c);
// The status of a running mirror pod.
kube::Object MirrorPodStatus(const std::string& ip, const std::string& now);
// The names the serving certificate covers (tls-san, node name and address,
// the kubernetes Service names, localhost).
std::vector<std::string> ServingNames(const std::string& node_name, const std::string& ip,
                                      const Rke2Config& c);
// kube-system/rke2-serving, as RKE2's dynamic listener stores it. Owned by
// the Node of the server that writes it (`node_name`, `node_uid`; none when
// the uid is empty): every guest cluster shares the workload apiserver, so
// what RKE2 keeps in a cluster's datastore must go when the cluster does.
kube::Object BuildServingSecret(const std::vector<std::string>& names, const std::string& cert_pem,
                                const std::string& key_pem, const std::string& node_name,
                                const std::string& node_uid);
// The ownerReferences of an existing rke2-serving with the server Node
// `node_name`/`node_uid` added, or nullopt when that Node owns it already.
// With every server of the cluster an owner, the garbage collector deletes
// the Secret once the last server Node is gone: the cluster is gone.
std::optional<kube::Object> ServingSecretOwnersWith(const kube::Object& secret,
                                                    const std::string& node_name,
                                                    const std::string& node_uid);

// Now as a MicroTime ("2006-01-02T15:04:05.000000Z").
std::string MicroTimeNow();

}  // namespace caphv::sim
