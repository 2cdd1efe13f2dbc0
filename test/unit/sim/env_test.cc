// Unit tests for sim/env.h and sim/manifests.h: environment seeds and the
// embedded manifests.

#include "sim/env.h"

#include <gtest/gtest.h>

#include <set>

#include "sim/manifests.h"
#include "sim/scheduling.h"

namespace caphv::sim {
namespace {

using kube::Object;

TEST(Manifests, CrdsCoverHarvesterKinds) {
  auto crds = CrdManifests();
  ASSERT_TRUE(crds.ok()) << crds.status().ToString();
  std::set<std::string> names;
  for (const auto& c : *crds) names.insert(kube::NameOf(c));
  EXPECT_EQ(names,
            (std::set<std::string>{
                "virtualmachines.kubevirt.io", "virtualmachineinstances.kubevirt.io",
                "virtualmachineimages.harvesterhci.io", "keypairs.harvesterhci.io",
                "settings.harvesterhci.io", "ippools.loadbalancer.harvesterhci.io",
                "loadbalancers.loadbalancer.harvesterhci.io",
                "network-attachment-definitions.k8s.cni.cncf.io", "tokens.management.cattle.io"}));
  for (const auto& c : *crds) {
    const auto& versions = c["spec"]["versions"];
    for (const auto& v : versions) {
      EXPECT_TRUE(v["schema"]["openAPIV3Schema"].is_object()) << kube::NameOf(c);
      const bool has_status = v.contains("subresources") && v["subresources"].contains("status");
      // Only the VM has a status subresource.
      EXPECT_EQ(has_status, kube::NameOf(c) == "virtualmachines.kubevirt.io") << kube::NameOf(c);
    }
  }
}

TEST(Environment, DefaultSeedParses) {
  auto env = LoadEnvironment("");
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  ASSERT_FALSE(env->images.empty());
  ASSERT_FALSE(env->networks.empty());
  ASSERT_FALSE(env->pools.empty());
  ASSERT_TRUE(env->lb_dhcp.has_value());
  auto objects = SeedObjects(*env);
  ASSERT_TRUE(objects.ok()) << objects.status().ToString();
  for (const auto& o : *objects) EXPECT_TRUE(GvrOf(o).ok()) << o.dump();
}

TEST(Environment, TheVipIsAnnouncedThroughIngressExpose) {
  auto env = ParseEnvironment("vip: 10.0.10.5\n");
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  auto objects = SeedObjects(*env);
  ASSERT_TRUE(objects.ok());
  ASSERT_EQ(objects->size(), 2u);  // the Service and the one default host
  const auto& svc = objects->front();
  EXPECT_EQ(kube::NamespaceOf(svc), "kube-system");
  EXPECT_EQ(kube::NameOf(svc), "ingress-expose");
  EXPECT_EQ(svc["spec"]["type"], "LoadBalancer");
  EXPECT_EQ(svc["metadata"]["annotations"]["kube-vip.io/loadbalancerIPs"], "10.0.10.5");
  // Without a VIP there is no such Service.
  auto none = ParseEnvironment("");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(SeedObjects(*none)->empty());
}

TEST(Environment, AnImageMayShipTheGuestAgent) {
  auto env = ParseEnvironment("images:\n- {name: plain}\n- {name: with-agent, guestAgent: true}\n");
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  ASSERT_EQ(env->images.size(), 2u);
  EXPECT_FALSE(env->images[0].guest_agent);
  EXPECT_TRUE(env->images[1].guest_agent);
}

TEST(Environment, HostsAreNodesLabelledAsHarvesterLabelsThem) {
  auto env = ParseEnvironment(
      "networks: [{name: vlan100, clusterNetwork: mgmt}, {name: vlan300, clusterNetwork: data}]\n"
      "hosts:\n- {name: h1, zone: zone-a}\n- {name: h2, labels: {rack: r7}}\n");
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  ASSERT_EQ(env->hosts.size(), 2u);
  auto objects = SeedObjects(*env);
  ASSERT_TRUE(objects.ok());
  std::vector<Object> nodes;
  for (const auto& o : *objects) {
    if (o["kind"] == "Node") nodes.push_back(o);
  }
  ASSERT_EQ(nodes.size(), 2u);
  const Object& h1 = nodes[0]["metadata"]["labels"];
  EXPECT_EQ(h1["kubernetes.io/hostname"], "h1");
  EXPECT_EQ(h1["topology.kubernetes.io/zone"], "zone-a");
  EXPECT_EQ(h1["network.harvesterhci.io/mgmt"], "true");
  EXPECT_EQ(h1["network.harvesterhci.io/data"], "true");
  const Object& h2 = nodes[1]["metadata"]["labels"];
  EXPECT_FALSE(h2.contains("topology.kubernetes.io/zone"));
  EXPECT_EQ(h2["rack"], "r7");
  EXPECT_EQ(nodes[0]["status"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ(nodes[0]["status"]["conditions"][0]["status"], "True");
  EXPECT_TRUE(GvrOf(nodes[0]).ok());
}

TEST(Environment, WithoutHostsThereIsOneHostInNoZone) {
  auto env = ParseEnvironment("vip: 10.0.10.5\n");
  ASSERT_TRUE(env.ok());
  ASSERT_EQ(env->hosts.size(), 1u);
  EXPECT_EQ(env->hosts[0].name, kDefaultHostName);
  EXPECT_TRUE(env->hosts[0].zone.empty());
  // The default environment has three zones.
  auto def = LoadEnvironment("");
  ASSERT_TRUE(def.ok());
  std::set<std::string> zones;
  for (const auto& h : def->hosts) zones.insert(h.zone);
  EXPECT_EQ(zones, (std::set<std::string>{"zone-a", "zone-b", "zone-c"}));
}

TEST(Environment, AnImageMayBootInFipsMode) {
  auto env = ParseEnvironment("images:\n- {name: plain}\n- {name: sles-fips, fips: true}\n");
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  ASSERT_EQ(env->images.size(), 2u);
  EXPECT_FALSE(env->images[0].fips);
  EXPECT_TRUE(env->images[1].fips);
}

TEST(Environment, RejectsIncompleteEntries) {
  EXPECT_FALSE(ParseEnvironment("hosts: [{zone: zone-a}]").ok());
  EXPECT_FALSE(ParseEnvironment("images: [{displayName: x}]").ok());
  EXPECT_FALSE(ParseEnvironment("keypairs: [{name: k}]").ok());
  auto empty = ParseEnvironment("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->images.empty());
}

TEST(Seeds, ImageCarriesStorageClassInStatus) {
  EnvImage im{"default", "image-abcde", "ubuntu", "https://example.invalid/u.img", 10, 20};
  auto o = ImageObject(im);
  EXPECT_EQ(o["status"]["storageClassName"], "longhorn-image-abcde");
  EXPECT_EQ(o["status"]["progress"], 100);
  EXPECT_EQ(o["spec"]["displayName"], "ubuntu");
  auto sc = ImageStorageClass(im);
  EXPECT_EQ(sc["metadata"]["name"], "longhorn-image-abcde");
  EXPECT_EQ(sc["provisioner"], "driver.longhorn.io");
}

TEST(Seeds, KeyPairFingerprintIsLegacyMd5) {
  const std::string key =
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDd6cUm8J2cQbmPDX0fGQvw6mRc1sGMl0Q9wIUmaz8vL demo";
  auto fp = KeyFingerprint(key);
  ASSERT_TRUE(fp.ok());
  EXPECT_EQ(*fp, "f6:94:de:9c:d0:db:cc:74:78:6d:c5:1c:2c:c6:32:4c");  // ssh-keygen -l -E md5
  auto kp = KeyPairObject({"default", "k", key});
  EXPECT_EQ(kp["status"]["conditions"][0]["type"], "validated");
  EXPECT_EQ(kp["status"]["conditions"][0]["status"], "True");
  EXPECT_FALSE(KeyFingerprint("not a key").ok());
  EXPECT_EQ(KeyPairObject({"default", "k", "garbage"})["status"]["conditions"][0]["status"],
            "False");
}

TEST(Seeds, NadHasNetworkControllerLabels) {
  EnvNetwork n;
  n.name = "vlan100";
  n.vlan = 100;
  n.cidr = "10.0.10.0/24";
  auto o = NadObject(n);
  EXPECT_EQ(o["metadata"]["labels"]["network.harvesterhci.io/type"], "L2VlanNetwork");
  EXPECT_EQ(o["metadata"]["labels"]["network.harvesterhci.io/vlan-id"], "100");
  auto config = kube::Object::parse(o["spec"]["config"].get<std::string>());
  EXPECT_EQ(config["bridge"], "mgmt-br");
  EXPECT_EQ(config["vlan"], 100);
}

}  // namespace
}  // namespace caphv::sim
