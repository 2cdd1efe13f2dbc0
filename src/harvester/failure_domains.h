// File: harvester/failure_domains.h
//
// Failure domains of a Harvester cluster, as upstream v0.9+ derives them
// from its hosts (the Nodes of the Harvester cluster): one domain per value
// of topology.kubernetes.io/zone when every host carries that label, else
// one domain per host name, so that no host is left out. Every domain is
// suitable for control planes and records, in its attribute `topologyKey`,
// the node label a machine of that domain is pinned by.
//
// A machine in a domain (Machine.spec.failureDomain, which Cluster API's
// control-plane providers choose from the published list, else
// HarvesterMachine.spec.failureDomain) gets a required node affinity
// `<topologyKey> In [<domain>]`, added to every node selector term the user
// wrote so that both hold. A domain the cluster does not publish pins by
// host name.
//
// Thread safety: pure functions over values.

#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/common.h"

namespace caphv::harvester {

inline constexpr std::string_view kZoneLabel = "topology.kubernetes.io/zone";
inline constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";
// The FailureDomain attribute naming the node label of its domain.
inline constexpr std::string_view kTopologyKeyAttribute = "topologyKey";

// A Harvester host as failure-domain discovery sees it.
struct Host {
  std::string name;
  std::string zone;  // its topology.kubernetes.io/zone label ("" = none)
  bool operator==(const Host&) const = default;
};

// The domains of `hosts`, sorted by name; none for no hosts.
std::vector<api::FailureDomain> FailureDomainsOfHosts(const std::vector<Host>& hosts);

// The node requirement pinning a machine to `domain`.
struct NodeRequirement {
  std::string key;
  std::string value;
  bool operator==(const NodeRequirement&) const = default;
};
NodeRequirement RequirementOfDomain(const std::vector<api::FailureDomain>& published,
                                    const std::string& domain);

// The failure domain a machine must land in: the Machine's, else the
// HarvesterMachine's own ("" = none).
std::string EffectiveFailureDomain(const std::string& machine_domain,
                                   const std::string& harvester_machine_domain);

}  // namespace caphv::harvester
