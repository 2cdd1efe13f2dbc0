// File: harvester/failure_domains.cc

#include "harvester/failure_domains.h"

#include <algorithm>
#include <set>

namespace caphv::harvester {

std::vector<api::FailureDomain> FailureDomainsOfHosts(const std::vector<Host>& hosts) {
  const bool zoned =
      !hosts.empty() && std::ranges::all_of(hosts, [](const Host& h) { return !h.zone.empty(); });
  const std::string key(zoned ? kZoneLabel : kHostnameLabel);
  std::set<std::string> names;
  for (const auto& h : hosts) names.insert(zoned ? h.zone : h.name);
  std::vector<api::FailureDomain> out;
  for (const auto& name : names) {
    api::FailureDomain d;
    d.name = name;
    d.control_plane = true;
    d.attributes[std::string(kTopologyKeyAttribute)] = key;
    out.push_back(std::move(d));
  }
  return out;
}

NodeRequirement RequirementOfDomain(const std::vector<api::FailureDomain>& published,
                                    const std::string& domain) {
  for (const auto& d : published) {
    if (d.name != domain) continue;
    if (auto it = d.attributes.find(std::string(kTopologyKeyAttribute));
        it != d.attributes.end() && !it->second.empty()) {
      return {it->second, domain};
    }
    break;
  }
  return {std::string(kHostnameLabel), domain};
}

std::string EffectiveFailureDomain(const std::string& machine_domain,
                                   const std::string& harvester_machine_domain) {
  return machine_domain.empty() ? harvester_machine_domain : machine_domain;
}

}  // namespace caphv::harvester
