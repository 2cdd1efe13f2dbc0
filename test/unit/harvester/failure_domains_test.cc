// Unit tests for harvester/failure_domains.h: the domains a Harvester
// cluster publishes and the node requirement of a machine in one.

#include "harvester/failure_domains.h"

#include <gtest/gtest.h>

namespace caphv::harvester {
namespace {

std::vector<std::string> Names(const std::vector<api::FailureDomain>& ds) {
  std::vector<std::string> out;
  for (const auto& d : ds) out.push_back(d.name);
  return out;
}

TEST(FailureDomainsTest, OneDomainPerZoneWhenEveryHostHasOne) {
  const auto ds = FailureDomainsOfHosts(
      {{"h3", "zone-b"}, {"h1", "zone-a"}, {"h2", "zone-b"}, {"h4", "zone-c"}});
  EXPECT_EQ(Names(ds), (std::vector<std::string>{"zone-a", "zone-b", "zone-c"}));
  for (const auto& d : ds) {
    EXPECT_EQ(d.control_plane, true);
    EXPECT_EQ(d.attributes.at("topologyKey"), "topology.kubernetes.io/zone");
  }
}

TEST(FailureDomainsTest, OneDomainPerHostWhenAHostHasNoZone) {
  // A host without a zone would be left out of every zone domain.
  const auto ds = FailureDomainsOfHosts({{"h2", "zone-a"}, {"h1", ""}});
  EXPECT_EQ(Names(ds), (std::vector<std::string>{"h1", "h2"}));
  for (const auto& d : ds) EXPECT_EQ(d.attributes.at("topologyKey"), "kubernetes.io/hostname");
}

TEST(FailureDomainsTest, NoHostsNoDomains) { EXPECT_TRUE(FailureDomainsOfHosts({}).empty()); }

TEST(FailureDomainsTest, AMachineIsPinnedByItsDomainsTopologyKey) {
  const auto published = FailureDomainsOfHosts({{"h1", "zone-a"}, {"h2", "zone-b"}});
  EXPECT_EQ(RequirementOfDomain(published, "zone-b"),
            (NodeRequirement{"topology.kubernetes.io/zone", "zone-b"}));
  // A domain the cluster does not publish (set by hand): a host name.
  EXPECT_EQ(RequirementOfDomain(published, "h7"),
            (NodeRequirement{"kubernetes.io/hostname", "h7"}));
  api::FailureDomain bare;
  bare.name = "rack-1";
  EXPECT_EQ(RequirementOfDomain({bare}, "rack-1"),
            (NodeRequirement{"kubernetes.io/hostname", "rack-1"}));
}

TEST(FailureDomainsTest, TheMachinesDomainWinsOverTheHarvesterMachines) {
  EXPECT_EQ(EffectiveFailureDomain("zone-a", "zone-b"), "zone-a");
  EXPECT_EQ(EffectiveFailureDomain("", "zone-b"), "zone-b");
  EXPECT_EQ(EffectiveFailureDomain("", ""), "");
}

}  // namespace
}  // namespace caphv::harvester
