// File: test/unit/generate/interactive_test.cc
//
// caphv generate --interactive (generate/interactive.h): what Harvester's
// objects become as choices (an image's state as Harvester shows it, a
// network's VLAN, a pool's free addresses, gateway and mask), the defaults
// (the flags given, else the first Active image, the pool of the chosen
// network, the SSH user of the image), the answers refused with their reason
// (the question stays), and the options a run of answers gives.

#include "generate/interactive.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace caphv::generate {
namespace {

using api::Json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Json Image(const std::string& ns, const std::string& name, const std::string& display,
           const Json& status) {
  return {{"apiVersion", "harvesterhci.io/v1beta1"},
          {"kind", "VirtualMachineImage"},
          {"metadata", {{"namespace", ns}, {"name", name}}},
          {"spec", {{"displayName", display}}},
          {"status", status}};
}

Json Imported(const std::string& status, const std::string& message = "") {
  Json c = {{"type", "Imported"}, {"status", status}};
  if (!message.empty()) c["message"] = message;
  return {{"progress", status == "True" ? 100 : 40}, {"conditions", Json::array({c})}};
}

Json KeyPair(const std::string& ns, const std::string& name) {
  return {{"metadata", {{"namespace", ns}, {"name", name}}},
          {"status", {{"fingerPrint", "aa:bb"}}}};
}

Json Network(const std::string& ns, const std::string& name, int vlan) {
  return {
      {"metadata", {{"namespace", ns}, {"name", name}}},
      {"spec",
       {{"config", Json({{"cniVersion", "0.3.1"}, {"type", "bridge"}, {"vlan", vlan}}).dump()}}}};
}

// A pool of `prefix`.10 .. .10+size-1 in prefix.0/24 on `network`, with
// `allocated` of its addresses taken.
Json Pool(const std::string& name, const std::string& prefix, int size, int allocated,
          const std::string& network, bool with_gateway = true) {
  Json range = {{"subnet", prefix + "0/24"},
                {"rangeStart", prefix + "10"},
                {"rangeEnd", prefix + std::to_string(10 + size - 1)}};
  if (with_gateway) range["gateway"] = prefix + "1";
  Json taken = Json::object();
  for (int i = 0; i < allocated; ++i)
    taken[prefix + std::to_string(10 + i)] = "ns/m" + std::to_string(i);
  return {{"metadata", {{"name", name}}},
          {"spec", {{"ranges", Json::array({range})}, {"selector", {{"network", network}}}}},
          {"status", {{"allocated", taken}}}};
}

// Harvester as the tests see it: an image being imported before an Active
// one, a failed one, two key pairs, two networks, three pools.
Inventory Harvester() {
  Inventory inv;
  inv.kubeconfig_path = "/home/u/harvester.yaml";
  inv.server = "https://10.0.0.5:6443";
  inv.images = ImageChoices({
      Image("default", "a-importing", "jammy", {{"progress", 40}}),
      Image("default", "ubuntu-noble", "ubuntu-24.04", Imported("True")),
      Image("default", "broken", "broken", Imported("False", "download failed: 404")),
      Image("other", "sles15", "sles15-sp7", Imported("True")),
  });
  inv.key_pairs = KeyPairChoices({KeyPair("default", "ops-key"), KeyPair("default", "dev-key")});
  inv.networks =
      NetworkChoices({Network("default", "vlan100", 100), Network("default", "vlan200", 200)});
  inv.pools = PoolChoices({
      Pool("pool-200", "10.2.0.", 10, 0, "default/vlan200"),
      Pool("full-100", "10.1.0.", 4, 4, "default/vlan100"),
      Pool("pool-100", "10.1.1.", 6, 2, "default/vlan100", /*with_gateway=*/false),
  });
  return inv;
}

Interview::Loader LoaderOf(const Inventory& inv) {
  return [inv](const std::string& path) -> kube::StatusOr<Inventory> {
    if (path != "/home/u/harvester.yaml") {
      return kube::Status(kube::StatusCode::kInvalidArgument,
                          "cannot read a kubeconfig from " + path);
    }
    return inv;
  };
}

// Answers the questions up to (not including) `key` with their defaults,
// the kubeconfig and the name given.
void AnswerUpTo(Interview& iv, std::string_view key) {
  while (!iv.Done() && iv.Current().key != key) {
    std::string answer;
    if (iv.Current().key == "harvester-kubeconfig") answer = "/home/u/harvester.yaml";
    if (iv.Current().key == "name") answer = "demo";
    ASSERT_EQ(iv.Answer(answer), "") << iv.Current().key;
  }
  ASSERT_FALSE(iv.Done()) << "no question " << key;
}

TEST(InteractiveChoices, ImagesWithTheirStateAsHarvesterShowsIt) {
  const auto images = Harvester().images;
  ASSERT_EQ(images.size(), 4u);
  EXPECT_EQ(images[0].ref, "default/a-importing");
  EXPECT_EQ(images[0].state, "Importing 40%");
  EXPECT_FALSE(images[0].active);
  EXPECT_EQ(images[1].ref, "default/broken");
  EXPECT_EQ(images[1].state, "Failed: download failed: 404");
  EXPECT_EQ(images[2].ref, "default/ubuntu-noble");
  EXPECT_EQ(images[2].state, "Active");
  EXPECT_TRUE(images[2].active);
  EXPECT_EQ(images[3].ref, "other/sles15");
}

TEST(InteractiveChoices, NetworksWithTheirVlanAndPoolsWithTheirFreeAddresses) {
  const auto inv = Harvester();
  ASSERT_EQ(inv.networks.size(), 2u);
  EXPECT_EQ(inv.networks[0].ref, "default/vlan100");
  EXPECT_EQ(inv.networks[0].detail, "VLAN 100");
  ASSERT_EQ(inv.pools.size(), 3u);
  EXPECT_EQ(inv.pools[0].name, "full-100");
  EXPECT_EQ(inv.pools[0].free, 0);
  EXPECT_EQ(inv.pools[1].name, "pool-100");
  EXPECT_EQ(inv.pools[1].free, 4);
  EXPECT_EQ(inv.pools[1].total, 6);
  EXPECT_EQ(inv.pools[1].gateway, "");  // the range gives none
  EXPECT_EQ(inv.pools[1].subnet_mask, "255.255.255.0");
  EXPECT_EQ(inv.pools[2].gateway, "10.2.0.1");
}

TEST(InteractiveChoices, SshUserOfTheImagesDistribution) {
  EXPECT_EQ(SshUserOfImage({"default/ubuntu-noble", "", "Active", true}), "ubuntu");
  EXPECT_EQ(SshUserOfImage({"default/img-1", "sles15-sp7-minimal", "Active", true}), "sles");
  EXPECT_EQ(SshUserOfImage({"default/img-2", "Rocky-9", "Active", true}), "rocky");
  EXPECT_EQ(SshUserOfImage({"default/img-3", "windows", "Active", true}), "");
}

TEST(Interview, QuestionsInOrderKubeconfigFirst) {
  EXPECT_THAT(Interview::Keys(),
              ElementsAre("harvester-kubeconfig", "name", "namespace", "target-namespace", "image",
                          "ssh-keypair", "ssh-user", "network", "ip-pool", "gateway", "subnet-mask",
                          "dns", "cp-replicas", "worker-replicas", "cpu", "memory", "disk-size",
                          "k8s-version", "cni"));
}

TEST(Interview, DefaultsComeFromHarvester) {
  Interview iv(Options{}, {}, LoaderOf(Harvester()));
  AnswerUpTo(iv, "image");
  Question q = iv.Current();
  EXPECT_EQ(q.prompt, "VM image");
  // Every image with its state, the first Active one the default.
  ASSERT_EQ(q.choices.size(), 4u);
  EXPECT_THAT(q.choices[0], HasSubstr("default/a-importing"));
  EXPECT_THAT(q.choices[0], HasSubstr("Importing 40%"));
  EXPECT_EQ(q.default_value, "default/ubuntu-noble");
  EXPECT_THAT(RenderQuestion(q), HasSubstr("  3) default/ubuntu-noble  ubuntu-24.04  Active\n"));
  EXPECT_THAT(RenderQuestion(q), ::testing::EndsWith("VM image [default/ubuntu-noble]: "));
  ASSERT_EQ(iv.Answer(""), "");

  EXPECT_EQ(iv.Current().default_value, "default/dev-key");  // the first, by name
  ASSERT_EQ(iv.Answer(""), "");
  EXPECT_EQ(iv.Current().default_value, "ubuntu");  // the image's user
  ASSERT_EQ(iv.Answer(""), "");
  ASSERT_EQ(iv.Answer("2"), "");  // default/vlan200
  EXPECT_EQ(iv.options().network, "default/vlan200");
  // The pool of that network with free addresses.
  EXPECT_EQ(iv.Current().default_value, "pool-200");
  ASSERT_EQ(iv.Answer(""), "");
  EXPECT_EQ(iv.Current().default_value, "10.2.0.1");  // its gateway
  ASSERT_EQ(iv.Answer(""), "");
  EXPECT_EQ(iv.Current().default_value, "255.255.255.0");  // its mask
}

TEST(Interview, FlagsGivenAreTheDefaults) {
  Options flags;
  flags.harvester_kubeconfig = "/home/u/harvester.yaml";
  flags.name = "prod";
  flags.image = "other/sles15";
  flags.ssh_user = "admin";
  flags.network = "default/vlan100";
  flags.gateway = "10.1.1.254";
  flags.cp_replicas = 1;
  Interview iv(flags,
               {"--harvester-kubeconfig", "--name", "--image", "--ssh-user", "--network",
                "--gateway", "--cp-replicas"},
               LoaderOf(Harvester()));
  EXPECT_EQ(iv.Current().default_value, "/home/u/harvester.yaml");
  ASSERT_EQ(iv.Answer(""), "");
  EXPECT_EQ(iv.Current().default_value, "prod");
  ASSERT_EQ(iv.Answer(""), "");
  EXPECT_EQ(iv.Current().default_value, "prod");  // the namespace: the name
  AnswerUpTo(iv, "image");
  EXPECT_EQ(iv.Current().default_value, "other/sles15");
  AnswerUpTo(iv, "ssh-user");
  EXPECT_EQ(iv.Current().default_value, "admin");
  AnswerUpTo(iv, "network");
  EXPECT_EQ(iv.Current().default_value, "default/vlan100");
  AnswerUpTo(iv, "ip-pool");
  EXPECT_EQ(iv.Current().default_value, "pool-100");  // full-100 has no free address
  AnswerUpTo(iv, "gateway");
  EXPECT_EQ(iv.Current().default_value, "10.1.1.254");
  AnswerUpTo(iv, "cp-replicas");
  EXPECT_EQ(iv.Current().default_value, "1");
}

TEST(Interview, RefusedAnswersSayWhyAndTheQuestionStays) {
  Interview iv(Options{}, {}, LoaderOf(Harvester()));
  EXPECT_EQ(iv.Current().default_value, "");
  EXPECT_EQ(iv.Answer(""), "an answer is required");
  EXPECT_EQ(iv.Answer("/nowhere"), "cannot read a kubeconfig from /nowhere");
  EXPECT_EQ(iv.Current().key, "harvester-kubeconfig");
  ASSERT_EQ(iv.Answer("/home/u/harvester.yaml"), "");
  EXPECT_EQ(iv.Answer("Demo_1"),
            "\"Demo_1\" is not a valid cluster name (lower case letters, digits and '-', at most "
            "63)");
  ASSERT_EQ(iv.Answer("demo"), "");
  AnswerUpTo(iv, "image");
  EXPECT_EQ(iv.Answer("7"), "choose 1 to 4, or type a name");
  EXPECT_EQ(iv.Answer("1"),
            "default/a-importing is not Active (Importing 40%): choose an Active image");
  EXPECT_EQ(iv.Answer("default/nothing"),
            "Harvester has no image default/nothing (choose one of the list)");
  EXPECT_EQ(iv.Current().key, "image");
  ASSERT_EQ(iv.Answer("ubuntu-noble"), "");  // a name of the default namespace
  EXPECT_EQ(iv.options().image, "default/ubuntu-noble");
  EXPECT_EQ(iv.Answer("default/no-key"),
            "Harvester has no key pair default/no-key (choose one of the list)");
  ASSERT_EQ(iv.Answer("2"), "");
  EXPECT_EQ(iv.options().ssh_keypair, "default/ops-key");
  AnswerUpTo(iv, "network");
  ASSERT_EQ(iv.Answer("default/vlan100"), "");
  EXPECT_EQ(iv.Answer("pool-200"), "pool-200 serves network default/vlan200, not default/vlan100");
  EXPECT_EQ(iv.Answer("full-100"),
            "no free address in full-100: choose a pool with free addresses");
  EXPECT_EQ(iv.Answer("nopool"), "Harvester has no IP pool nopool (choose from the list)");
  ASSERT_EQ(iv.Answer("2,1"), "");  // pool-100 first, then full-100
  EXPECT_EQ(iv.options().ip_pool_refs, "pool-100,full-100");
  // pool-100's range gives no gateway: no default.
  EXPECT_EQ(iv.Current().default_value, "");
  EXPECT_EQ(iv.Answer("10.1.1"), "\"10.1.1\" is not an IPv4 address");
  ASSERT_EQ(iv.Answer("10.1.1.1"), "");
  ASSERT_EQ(iv.Answer(""), "");  // mask
  EXPECT_EQ(iv.Answer("8.8.8.8,x"), "\"x\" is not an IPv4 address");
  ASSERT_EQ(iv.Answer("none"), "");
  EXPECT_EQ(iv.options().dns, "");
  // Four free addresses: the machines must fit.
  EXPECT_EQ(iv.Answer("three"), "\"three\" is not a number");
  EXPECT_EQ(iv.Answer("0"), "must be at least 1");
  EXPECT_EQ(iv.Answer("5"), "the pools (pool-100, full-100) have 4 free addresses: at most 4");
  ASSERT_EQ(iv.Answer("3"), "");
  EXPECT_EQ(iv.Answer(""),
            "the pools (pool-100, full-100) have 4 free addresses for 3 control-plane machines: at "
            "most 1");
  ASSERT_EQ(iv.Answer("1"), "");
  EXPECT_EQ(iv.Answer("0"), "must be at least 1");  // CPUs
  ASSERT_EQ(iv.Answer("4"), "");
  EXPECT_EQ(iv.Answer("lots"), "\"lots\" is not a quantity (e.g. 40Gi)");
  ASSERT_EQ(iv.Answer("8Gi"), "");
  ASSERT_EQ(iv.Answer("80Gi"), "");
  EXPECT_EQ(iv.Answer("1.31"), "\"1.31\" is not a version (e.g. v1.31.14)");
  ASSERT_EQ(iv.Answer("v1.32.3"), "");
  EXPECT_EQ(iv.Answer("5"), "choose 1 to 4");
  EXPECT_EQ(iv.Answer("flannel"), "\"flannel\" is not one of calico, canal, cilium, none");
  ASSERT_EQ(iv.Answer("3"), "");
  ASSERT_TRUE(iv.Done());

  const Options& o = iv.options();
  EXPECT_EQ(o.harvester_kubeconfig, "/home/u/harvester.yaml");
  EXPECT_EQ(o.cp_replicas, 3);
  EXPECT_EQ(o.worker_replicas, 1);
  EXPECT_EQ(o.cpu, 4);
  EXPECT_EQ(o.cni, "cilium");
  EXPECT_EQ(o.k8s_version, "v1.32.3");
  EXPECT_TRUE(Validate(o).ok()) << Validate(o).ToString();
}

TEST(Interview, AListHarvesterDoesNotShowTakesAnyWellFormedAnswer) {
  Inventory inv = Harvester();
  inv.key_pairs.clear();
  inv.errors["key pairs"] = "forbidden";
  Interview iv(Options{}, {}, LoaderOf(inv));
  AnswerUpTo(iv, "ssh-keypair");
  const Question q = iv.Current();
  EXPECT_EQ(q.note, "(cannot list the key pairs of Harvester: forbidden)");
  EXPECT_EQ(q.default_value, "");
  EXPECT_EQ(iv.Answer("not a ref!"),
            "\"not a ref!\" is not a Harvester object (namespace/name, e.g. default/my-key)");
  ASSERT_EQ(iv.Answer("team/their-key"), "");
  EXPECT_EQ(iv.options().ssh_keypair, "team/their-key");
}

TEST(Interview, SummaryNamesWhatWillBeMade) {
  Options flags;
  flags.network = "default/vlan200";
  Interview iv(flags, {"--network"}, LoaderOf(Harvester()));
  AnswerUpTo(iv, "cni");
  ASSERT_EQ(iv.Answer(""), "");
  std::map<std::string, std::string> s;
  for (const auto& [label, value] : iv.Summary()) s[label] = value;
  EXPECT_EQ(s["Harvester"], "/home/u/harvester.yaml (https://10.0.0.5:6443)");
  EXPECT_EQ(s["Cluster"], "demo/demo of the ClusterClass harvester-rke2");
  EXPECT_EQ(s["Image"], "default/ubuntu-noble");
  EXPECT_EQ(s["SSH"], "ubuntu, key pair default/dev-key");
  EXPECT_EQ(s["IP pools"], "pool-200 (10 free addresses)");
  EXPECT_EQ(s["Gateway / mask"], "10.2.0.1 / 255.255.255.0");
  EXPECT_EQ(s["Machines"], "3 control plane, 2 workers; 2 CPUs, 4Gi memory, 40Gi disk each");
  EXPECT_EQ(s["Kubernetes"], "v1.31.14+rke2r1, CNI calico");
}

TEST(Interview, FlagsItDoesNotAskAreCheckedFirst) {
  Options o;
  EXPECT_TRUE(CheckUnaskedFlags(o).ok());
  o.cni_mtu = 100;
  EXPECT_EQ(CheckUnaskedFlags(o).message(), "--cni-mtu: 100 is not between 576 and 9000");
}

}  // namespace
}  // namespace caphv::generate
