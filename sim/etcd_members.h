// File: sim/etcd_members.h
//
// The etcd of the simulated RKE2 control planes: one real `etcd` process per
// member, on loopback, as RKE2 runs one per server node. A guest cluster's
// first server starts a new etcd cluster; every further server joins as a
// learner (as RKE2 does) and is promoted once it has caught up. Members are
// named as RKE2 names them (the Node's `etcd.rke2.cattle.io/node-name`).
//
// Each member listens on three loopback ports:
//   client  https with a serving certificate the cluster's etcd CA signed,
//           client certificates verified against that CA (the
//           `server-ca.{crt,key}` the RKE2 bootstrap provider writes onto
//           the first server): what the RKE2 control-plane provider reaches
//           through a pod port-forward to `etcd-<node>:2379`;
//   http    the same API without TLS: the simulator's own channel for
//           membership changes, and the tests' probe;
//   peer    raft between the members (plain http on loopback).
// Data lives in <root>/<cluster>/<member>/ (the cluster's CA next to it), so
// a killed member restarts with its data, as a rebooted server does.
//
// Membership changes go through a live member's JSON gateway
// (/v3/cluster/member/*). Remove() plays RKE2's own member removal (the
// `etcd.rke2.cattle.io/remove` node annotation): it never removes the last
// voting member, and a name that is no member is already removed.
//
// Processes are children of the simulator (killed with it); ~EtcdMembers
// stops them all.
//
// Thread safety: all methods may be called concurrently.

#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kube/object.h"
#include "kube/status.h"

namespace caphv::sim {

struct EtcdMembersOptions {
  std::string binary;  // the etcd executable; "" = no etcd (members are never started)
  std::string root;    // data directory root
};

struct EtcdEndpoint {
  int client_port = 0;  // https (client-cert auth)
  int http_port = 0;    // plain http
  bool voter = false;   // false while a learner waits for promotion
};

// One member as a live member reports it.
struct EtcdMemberStatus {
  std::string id;  // decimal, as the JSON gateway prints uint64
  std::string name;
  bool learner = false;
};

class EtcdMembers {
 public:
  explicit EtcdMembers(EtcdMembersOptions options);
  ~EtcdMembers();
  EtcdMembers(const EtcdMembers&) = delete;
  EtcdMembers& operator=(const EtcdMembers&) = delete;

  bool enabled() const { return !opt_.binary.empty(); }

  // Runs member `name` of `cluster` (starting a new etcd cluster, joining
  // as a learner, or restarting with its data). `ca_pem` is the cluster's
  // etcd CA when this guest carries it ("" otherwise; it is kept from the
  // first guest that does). kUnavailable while no CA is known yet,
  // while it cannot join (no live member) or a learner is not
  // promoted yet: retry; kConflict for a member Remove() took out.
  kube::StatusOr<EtcdEndpoint> Ensure(const std::string& cluster, const std::string& name,
                                      const std::string& ca_pem, const std::string& ca_key_pem);

  // Removes `name` from the membership and stops its process. OK when it is
  // no member; kConflict for the last voting member; kUnavailable
  // when no live member answers.
  kube::Status Remove(const std::string& cluster, const std::string& name);

  // SIGKILLs the member's process, keeping its data (a dead guest).
  void Kill(const std::string& cluster, const std::string& name);
  // Stops the process and deletes its data (the VM is gone). The membership
  // is left as it is: a member not removed before stays, stale.
  void Discard(const std::string& cluster, const std::string& name);

  // The membership as a live member of `cluster` reports it.
  kube::StatusOr<std::vector<EtcdMemberStatus>> List(const std::string& cluster);

 private:
  struct Proc {
    pid_t pid = 0;
    int client_port = 0, http_port = 0, peer_port = 0;
    bool voter = false;
    std::string id;  // member id once known
  };
  struct Cluster {
    std::map<std::string, Proc> members;  // by member name
    std::set<std::string> removed;        // RKE2 never restarts a removed member
  };

  std::string ClusterDir(const std::string& cluster) const;
  std::string MemberDir(const std::string& cluster, const std::string& name) const;
  bool Alive(Proc& p);
  void Stop(Proc& p);
  // A live member's http port other than `except` (0 = none).
  int LiveHttpPort(Cluster& c, const std::string& except);
  kube::Status Start(const std::string& cluster, const std::string& name, Proc& p,
                     const std::string& initial_cluster, bool existing);
  kube::StatusOr<kube::Object> Call(int http_port, const std::string& path,
                                    const kube::Object& body);

  EtcdMembersOptions opt_;
  std::mutex mu_;
  std::map<std::string, Cluster> clusters_;
};

// The members of a /v3/cluster/member/list (or add) answer.
std::vector<EtcdMemberStatus> ParseEtcdMembers(const kube::Object& response);
// "<name>=<peer url>,..." of `members` for --initial-cluster, `self` (no
// name yet in the answer of member/add) under `self_name`.
std::string InitialCluster(const kube::Object& response, const std::string& self_peer,
                           const std::string& self_name);

}  // namespace caphv::sim
