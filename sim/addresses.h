// File: sim/addresses.h
//
// The two DHCP servers the simulator plays, each guarding its own tables:
//   - VmAddresses: the DHCP server of each VM network (SimOptions::env's
//     networks; 10.52.0.10–10.52.255.250 on the pod network), and which VM
//     holds which address, static ones included (the VM webhook refuses an
//     address another VM holds);
//   - LbLeases: the DHCP server of the load balancers' network
//     (Environment::lb_dhcp), one range shared by Harvester's load-balancer
//     controller (a `cluster` LB's own lease) and kube-vip (a Service asking
//     for 0.0.0.0).
//
// Thread safety: every method locks the object's own mutex; the informers
// read are thread-safe.

#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "sim/context.h"
#include "sim/kubevirt.h"

namespace caphv::sim {

class VmAddresses {
 public:
  explicit VmAddresses(const SimContext& ctx) : ctx_(ctx) {}

  // Gives each NIC of VM `vm_key` without a static address its lease: the
  // one it holds, else the address its VMI reports, else a free one of its
  // network's DHCP range (none when the network has no DHCP server or the
  // range is full). Records every address of the VM.
  std::vector<Nic> Assign(const std::string& vm_key, const kube::Object* vmi,
                          std::vector<Nic> nics);
  // The VM stopped or went: its leases end.
  void Release(const std::string& vm_key);
  // Every address held, and the VM key holding it.
  std::map<std::string, std::string> InUse() const;
  // The addresses of one VM.
  std::set<std::string> Of(const std::string& vm_key) const;

 private:
  const SimContext& ctx_;
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, std::string>> leases_;  // vm key -> nic -> ip
  std::map<std::string, std::set<std::string>> vm_ips_;               // vm key -> ips
};

class LbLeases {
 public:
  enum class Holder { kLoadBalancer, kService };

  explicit LbLeases(const SimContext& ctx) : ctx_(ctx) {}

  // A lease for `owner` ("<ns>/<name>"): the one it holds, else `current`
  // when that is of the range and nobody else holds it, else a free address.
  // Recorded unless "" (no range, or the range is full).
  std::string Lease(Holder holder, const std::string& owner, const std::string& current);
  void Release(Holder holder, const std::string& owner);

 private:
  std::map<std::string, std::string>& Table(Holder holder) {
    return holder == Holder::kLoadBalancer ? lb_leases_ : vip_leases_;
  }

  const SimContext& ctx_;
  std::mutex mu_;
  std::map<std::string, std::string> lb_leases_;   // "<ns>/<name>" of a cluster LB -> ip
  std::map<std::string, std::string> vip_leases_;  // "<ns>/<name>" of a Service -> ip
};

}  // namespace caphv::sim
