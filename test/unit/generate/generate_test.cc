// File: test/unit/generate/generate_test.cc
//
// caphv generate's objects (generate/generate.h), case by case: one pool,
// several pools with an extra disk, Fleet; the Cluster's variables checked
// against the ClusterClass of templates/ (the one the binary embeds); the
// flags refused with one line naming the flag.

#include "generate/generate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "../api/test_paths.h"
#include "api/yaml.h"
#include "kube/base64.h"

namespace caphv::generate {
namespace {

using api::Json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kKubeconfig[] = "apiVersion: v1\nkind: Config\nclusters: []\n";

Options Seed() {
  // The seed's example (the Go provider's production guide).
  Options o;
  o.name = "production-cluster";
  o.ns = "prod-ns";
  o.image = "default/sles15-sp7-minimal-vm.x86_64-cloud-qu2.qcow2";
  o.ssh_keypair = "default/capi-ssh-key";
  o.network = "default/production";
  o.gateway = "172.16.0.1";
  o.subnet_mask = "255.255.0.0";
  o.ip_pool = "prod-ip-pool";
  o.dns = "172.16.0.1";
  o.harvester_kubeconfig = "/path/harvester.yaml";
  o.cp_replicas = 3;
  o.worker_replicas = 2;
  o.cpu = 4;
  o.memory = "8Gi";
  o.disk_size = "80Gi";
  o.k8s_version = "v1.31.14";
  return o;
}

std::vector<Json> MustBuild(const Options& o) {
  auto objects = Build(o, kKubeconfig);
  EXPECT_TRUE(objects.ok()) << objects.status().ToString();
  return objects.ok() ? *objects : std::vector<Json>{};
}

std::vector<std::string> KindsAndNames(const std::vector<Json>& objects) {
  std::vector<std::string> out;
  for (const auto& o : objects) {
    out.push_back(o["kind"].get<std::string>() + " " + o["metadata"]["name"].get<std::string>());
  }
  return out;
}

const Json* Find(const std::vector<Json>& objects, std::string_view kind) {
  for (const auto& o : objects) {
    if (o["kind"] == kind) return &o;
  }
  return nullptr;
}

Json Variable(const Json& cluster, std::string_view name) {
  for (const auto& v : cluster["spec"]["topology"]["variables"]) {
    if (v["name"] == name) return v["value"];
  }
  ADD_FAILURE() << "no variable " << name;
  return nullptr;
}

// The ClusterClass of the repository, read from the source tree (not from
// the binary): the variables the Cluster must match.
Json RepoClass() {
  auto text = api::ReadFile(
      (caphv::testing::SourceDir() / "templates" / "clusterclass-harvester-rke2.yaml").string());
  if (!text.ok()) {
    ADD_FAILURE() << "templates/ not found under " << caphv::testing::SourceDir();
    return nullptr;
  }
  auto docs = api::ParseYaml(*text);
  if (!docs.ok()) {
    ADD_FAILURE() << docs.status().ToString();
    return nullptr;
  }
  for (const auto& d : *docs) {
    if (d["kind"] == "ClusterClass") return d;
  }
  ADD_FAILURE() << "no ClusterClass in templates/";
  return nullptr;
}

// Each variable the Cluster sets is declared by the class with a schema its
// value fits (type, object properties, enums); each required one is set.
void ExpectVariablesMatchClass(const Json& cluster) {
  const Json cc = RepoClass();
  std::map<std::string, Json> schemas;
  for (const auto& v : cc["spec"]["variables"]) {
    schemas[v["name"]] = v["schema"]["openAPIV3Schema"];
  }
  std::set<std::string> set;
  std::function<void(const Json&, const Json&, const std::string&)> check =
      [&](const Json& schema, const Json& value, const std::string& path) {
        const std::string type = schema.value("type", "");
        if (type == "boolean") {
          EXPECT_TRUE(value.is_boolean()) << path;
        } else if (type == "string") {
          EXPECT_TRUE(value.is_string()) << path;
          if (schema.contains("enum")) {
            EXPECT_NE(std::find(schema["enum"].begin(), schema["enum"].end(), value),
                      schema["enum"].end())
                << path << " = " << value;
          }
        } else if (type == "integer") {
          ASSERT_TRUE(value.is_number_integer()) << path;
          if (schema.contains("minimum")) {
            EXPECT_GE(value.get<int>(), schema["minimum"].get<int>()) << path;
          }
        } else if (type == "array") {
          ASSERT_TRUE(value.is_array()) << path;
          for (const auto& item : value) check(schema["items"], item, path + "[]");
        } else if (type == "object") {
          ASSERT_TRUE(value.is_object()) << path;
          for (const auto& [k, v] : value.items()) {
            ASSERT_TRUE(schema["properties"].contains(k))
                << path << "." << k << " not in the class";
            check(schema["properties"][k], v, path + "." + k);
          }
        }
      };
  for (const auto& v : cluster["spec"]["topology"]["variables"]) {
    const std::string name = v["name"];
    ASSERT_TRUE(schemas.contains(name)) << "the class has no variable " << name;
    set.insert(name);
    check(schemas[name], v["value"], name);
  }
  for (const auto& v : cc["spec"]["variables"]) {
    if (v.value("required", false)) {
      EXPECT_TRUE(set.contains(v["name"])) << v["name"];
    }
  }
  EXPECT_EQ(cluster["spec"]["topology"]["class"], cc["metadata"]["name"]);
  EXPECT_EQ(cluster["spec"]["topology"]["workers"]["machineDeployments"][0]["class"],
            cc["spec"]["workers"]["machineDeployments"][0]["class"]);
}

TEST(Generate, SinglePoolMakesWhatTheSeedLists) {
  const auto objects = MustBuild(Seed());
  EXPECT_THAT(
      KindsAndNames(objects),
      ElementsAre("Namespace prod-ns", "ClusterClass harvester-rke2",
                  "HarvesterClusterTemplate harvester-rke2-cluster",
                  "RKE2ControlPlaneTemplate harvester-rke2-control-plane",
                  "HarvesterMachineTemplate harvester-rke2-control-plane",
                  "HarvesterMachineTemplate harvester-rke2-worker",
                  "RKE2ConfigTemplate harvester-rke2-worker", "Secret hv-identity-secret",
                  "Cluster production-cluster", "ConfigMap cloud-config-addon-production-cluster",
                  "ClusterResourceSet production-cluster-harvester-cloud-provider",
                  "ConfigMap harvester-csi-driver", "ClusterResourceSet harvester-csi-driver",
                  "ConfigMap cni-addon-production-cluster",
                  "ClusterResourceSet production-cluster-cni",
                  "MachineHealthCheck production-cluster-workers",
                  "MachineHealthCheck production-cluster-control-plane"));
  for (const auto& o : objects) {
    if (o["kind"] == "Namespace") continue;
    EXPECT_EQ(o["metadata"]["namespace"], "prod-ns") << o["kind"];
  }
  const Json& secret = *Find(objects, "Secret");
  EXPECT_EQ(kube::Base64Decode(secret["data"]["kubeconfig"].get<std::string>()), kKubeconfig);

  const Json& cluster = *Find(objects, "Cluster");
  ExpectVariablesMatchClass(cluster);
  EXPECT_EQ(cluster["spec"]["topology"]["version"], "v1.31.14+rke2r1");
  EXPECT_EQ(cluster["spec"]["topology"]["controlPlane"]["replicas"], 3);
  EXPECT_EQ(cluster["spec"]["topology"]["workers"]["machineDeployments"][0]["replicas"], 2);
  EXPECT_EQ(Variable(cluster, "ipPoolRef"), "prod-ip-pool");
  EXPECT_EQ(Variable(cluster, "ipPoolRefs"), Json::array());
  EXPECT_EQ(Variable(cluster, "cpuCount"), 4);
  EXPECT_EQ(Variable(cluster, "memorySize"), "8Gi");
  EXPECT_EQ(Variable(cluster, "dnsServers"), Json::array({"172.16.0.1"}));
  EXPECT_EQ(Variable(cluster, "identitySecretName"), secret["metadata"]["name"]);
  EXPECT_EQ(Variable(cluster, "volumes"), Json::parse(R"([{"volumeType":"image","imageName":
              "default/sles15-sp7-minimal-vm.x86_64-cloud-qu2.qcow2","volumeSize":"80Gi",
              "bootOrder":1}])"));
  EXPECT_EQ(cluster["spec"]["clusterNetwork"]["pods"]["cidrBlocks"][0], "10.42.0.0/16");

  // Each ClusterResourceSet selects the Cluster.
  for (const auto& o : objects) {
    if (o["kind"] != "ClusterResourceSet") continue;
    for (const auto& [k, v] : o["spec"]["clusterSelector"]["matchLabels"].items()) {
      EXPECT_EQ(cluster["metadata"]["labels"].value(k, ""), v.get<std::string>())
          << o["metadata"]["name"];
    }
  }
  // The cloud provider's ConfigMap is the one the class points CAPHV at, with
  // the cluster's name in the CCM's flags; the CNI's carries the flags.
  const Json& ccm = objects[9];
  EXPECT_THAT(ccm["data"]["cloud-config.yaml"].get<std::string>(),
              HasSubstr("--cluster-name=production-cluster"));
  const Json& cni = objects[13];
  const std::string hcc = cni["data"]["rke2-calico-config.yaml"];
  EXPECT_THAT(hcc, HasSubstr("name: rke2-calico"));
  EXPECT_THAT(hcc, HasSubstr("mtu: 1500"));
  EXPECT_THAT(hcc, HasSubstr("encapsulation: VXLANCrossSubnet"));
  EXPECT_THAT(hcc, HasSubstr("cidr: 10.42.0.0/16"));
  EXPECT_EQ(objects.back()["spec"]["clusterName"], "production-cluster");
  EXPECT_EQ(objects.back()["spec"]["maxUnhealthy"], "34%");
}

TEST(Generate, MultiPoolWithExtraDisk) {
  Options o = Seed();
  o.ip_pool = "";
  o.ip_pool_refs = "pool-a, pool-b";
  o.extra_disk = "10Gi:fast";
  o.dns = "";
  const auto objects = MustBuild(o);
  const Json& cluster = *Find(objects, "Cluster");
  ExpectVariablesMatchClass(cluster);
  EXPECT_EQ(Variable(cluster, "ipPoolRefs"), Json::array({"pool-a", "pool-b"}));
  EXPECT_EQ(Variable(cluster, "ipPoolRef"), "");
  EXPECT_EQ(Variable(cluster, "dnsServers"), Json::array());
  const Json volumes = Variable(cluster, "volumes");
  ASSERT_EQ(volumes.size(), 2u);
  EXPECT_EQ(volumes[1], Json::parse(R"({"volumeType":"storageClass","storageClass":"fast",
                                       "volumeSize":"10Gi","bootOrder":0})"));

  o.extra_disk = "20Gi";  // the class defaults to longhorn, as the Go script
  EXPECT_EQ(Variable(*Find(MustBuild(o), "Cluster"), "volumes")[1]["storageClass"], "longhorn");
}

TEST(Generate, FleetReplacesTheCsiAndCniSets) {
  Options o = Seed();
  o.fleet_addon_repo = "https://git.example.test/addons.git";
  o.fleet_addon_branch = "stable";
  o.cni_mtu = 1450;
  const auto objects = MustBuild(o);
  const auto names = KindsAndNames(objects);
  EXPECT_THAT(names, ::testing::Contains("GitRepo production-cluster-addons"));
  EXPECT_THAT(names, ::testing::Contains("ConfigMap cloud-config-addon-production-cluster"));
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("ConfigMap harvester-csi-driver")));
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("ConfigMap cni-addon-production-cluster")));
  const Json& repo = *Find(objects, "GitRepo");
  EXPECT_EQ(repo["metadata"]["namespace"], "fleet-default");
  EXPECT_EQ(repo["spec"]["repo"], o.fleet_addon_repo);
  EXPECT_EQ(repo["spec"]["branch"], "stable");
  EXPECT_EQ(repo["spec"]["paths"], Json::array({"/fleet/harvester-csi", "/fleet/calico-config"}));
  EXPECT_EQ(
      repo["spec"]["targets"][0]["clusterSelector"]["matchLabels"]["cluster.x-k8s.io/cluster-name"],
      "production-cluster");
  const Json& cluster = *Find(objects, "Cluster");
  EXPECT_FALSE(cluster["metadata"]["labels"].contains("csi"));
  EXPECT_EQ(cluster["metadata"]["annotations"]["caphv.io/cni-mtu"], "1450");

  o.cni = "none";
  EXPECT_EQ((*Find(MustBuild(o), "GitRepo"))["spec"]["paths"],
            Json::array({"/fleet/harvester-csi"}));
}

TEST(Generate, NamespaceDefaultsToTheNameAndTheClassCanBeLeftOut) {
  Options o = Seed();
  o.ns = "";
  o.with_class = false;
  const auto objects = MustBuild(o);
  EXPECT_EQ(objects[0]["metadata"]["name"], "production-cluster");
  EXPECT_EQ(Find(objects, "ClusterClass"), nullptr);
  EXPECT_EQ(Find(objects, "HarvesterMachineTemplate"), nullptr);
  EXPECT_EQ((*Find(objects, "Cluster"))["metadata"]["namespace"], "production-cluster");
}

// The RKE2 providers v0.22+ serve their templates at v1beta2 to Cluster API
// v1.11+, which matches a patch's selector by apiVersion: the class names
// that version everywhere (refs, selectors, the templates), and only the
// RKE2 providers' apiVersions change.
TEST(Generate, TheClassRefersToTheRke2ApiVersionAsked) {
  std::function<void(const Json&, std::vector<std::string>&)> api_versions =
      [&](const Json& node, std::vector<std::string>& out) {
        if (node.is_array()) {
          for (const auto& item : node) api_versions(item, out);
        } else if (node.is_object()) {
          for (const auto& [key, value] : node.items()) {
            if (key == "apiVersion" && value.is_string()) {
              out.push_back(value.get<std::string>());
            } else {
              api_versions(value, out);
            }
          }
        }
      };
  auto collect = [&](const std::vector<Json>& objects) {
    std::vector<std::string> out;
    for (const auto& o : objects) api_versions(o, out);
    return out;
  };
  Options o = Seed();
  const auto v1 = collect(MustBuild(o));
  o.rke2_api_version = "v1beta2";
  const auto v2 = collect(MustBuild(o));
  ASSERT_EQ(v1.size(), v2.size());
  size_t rke2 = 0;
  for (size_t i = 0; i < v1.size(); ++i) {
    if (v1[i].starts_with("controlplane.cluster.x-k8s.io/") ||
        v1[i].starts_with("bootstrap.cluster.x-k8s.io/")) {
      ++rke2;
      EXPECT_TRUE(v1[i].ends_with("/v1beta1")) << v1[i];
      EXPECT_EQ(v2[i], v1[i].substr(0, v1[i].find('/')) + "/v1beta2");
    } else {
      EXPECT_EQ(v2[i], v1[i]);
    }
  }
  // The control plane's ref, the worker's bootstrap ref, the cni patch's
  // selector, the two templates; the Cluster's controlPlaneRef is CAPI's.
  EXPECT_GE(rke2, 5u);
  o.with_class = false;
  for (const auto& object : MustBuild(o)) EXPECT_TRUE(ResourceOf(object).ok()) << object["kind"];
  o.with_class = true;
  for (const auto& object : MustBuild(o)) EXPECT_TRUE(ResourceOf(object).ok()) << object["kind"];
}

TEST(Generate, Rke2ApiVersionsAClassRefersTo) {
  Options o = Seed();
  std::set<std::string> v1, v2;
  for (const auto& object : MustBuild(o)) {
    if (object.value("kind", "") == "ClusterClass") v1 = Rke2ApiVersionsIn(object);
  }
  o.rke2_api_version = "v1beta2";
  for (const auto& object : MustBuild(o)) {
    if (object.value("kind", "") == "ClusterClass") v2 = Rke2ApiVersionsIn(object);
  }
  EXPECT_EQ(v1, std::set<std::string>{"v1beta1"});
  EXPECT_EQ(v2, std::set<std::string>{"v1beta2"});
  // Half moved by hand: both; other groups and non-strings are not RKE2's.
  const Json mixed = Json::parse(R"({"spec":{"controlPlane":{"ref":{
      "apiVersion":"controlplane.cluster.x-k8s.io/v1beta2"}},"workers":[{"template":{
      "bootstrap":{"ref":{"apiVersion":"bootstrap.cluster.x-k8s.io/v1beta1"}},
      "infrastructure":{"ref":{"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1"}}}}],
      "x":{"apiVersion":7}}})");
  EXPECT_EQ(Rke2ApiVersionsIn(mixed), (std::set<std::string>{"v1beta1", "v1beta2"}));
  EXPECT_TRUE(Rke2ApiVersionsIn(Json::object()).empty());
}

TEST(Generate, EveryObjectHasAKnownResource) {
  Options o = Seed();
  for (const auto& object : MustBuild(o)) EXPECT_TRUE(ResourceOf(object).ok()) << object["kind"];
  o.fleet_addon_repo = "https://git.example.test/addons.git";
  for (const auto& object : MustBuild(o)) EXPECT_TRUE(ResourceOf(object).ok()) << object["kind"];
}

TEST(Generate, YamlStreamReadsBack) {
  const auto objects = MustBuild(Seed());
  auto back = api::ParseYaml(ToYamlStream(objects));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, objects);
}

struct BadFlag {
  std::function<void(Options&)> change;
  std::string line;
};

TEST(Generate, BadFlagsGiveOneLineNamingTheFlag) {
  const std::vector<BadFlag> cases = {
      {[](Options& o) { o.name = "My_Cluster"; }, "--name: \"My_Cluster\" is not a valid cluster"},
      {[](Options& o) { o.image = ""; }, "--image: required"},
      {[](Options& o) { o.network = "a/b/c"; }, "--network: \"a/b/c\" is not a Harvester object"},
      {[](Options& o) { o.gateway = "172.16.0"; },
       "--gateway: \"172.16.0\" is not an IPv4 address"},
      {[](Options& o) { o.subnet_mask = "255.0.255.0"; },
       "--subnet-mask: \"255.0.255.0\" is not a subnet mask"},
      {[](Options& o) { o.dns = "1.1.1.1,8.8.8"; }, "--dns: \"8.8.8\" is not an IPv4 address"},
      {[](Options& o) { o.ip_pool = ""; }, "--ip-pool: required (or --ip-pool-refs)"},
      {[](Options& o) { o.ip_pool_refs = "a,B"; }, "--ip-pool-refs: \"B\" is not an IPPool name"},
      {[](Options& o) { o.extra_disk = "big:longhorn"; }, "--extra-disk: \"big:longhorn\" is not"},
      {[](Options& o) { o.cp_replicas = 0; }, "--cp-replicas: must be at least 1"},
      {[](Options& o) { o.worker_replicas = -1; }, "--worker-replicas: must not be negative"},
      {[](Options& o) { o.cpu = 0; }, "--cpu: must be at least 1"},
      {[](Options& o) { o.memory = "4GB"; }, "--memory: \"4GB\" is not a quantity"},
      {[](Options& o) { o.disk_size = "0"; }, "--disk-size: \"0\" must be more than zero"},
      {[](Options& o) { o.k8s_version = "1.31"; }, "--k8s-version: \"1.31\" is not a version"},
      {[](Options& o) { o.cni = "flannel"; }, "--cni: \"flannel\" is not one of"},
      {[](Options& o) { o.cni_mtu = 100; }, "--cni-mtu: 100 is not between 576 and 9000"},
      {[](Options& o) { o.cni_encapsulation = "GRE"; }, "--cni-encapsulation: \"GRE\" is not"},
      {[](Options& o) { o.cni_bgp = "on"; }, "--cni-bgp: \"on\" is not Enabled or Disabled"},
      {[](Options& o) { o.pod_cidr = "10.42.0.0/33"; },
       "--pod-cidr: \"10.42.0.0/33\" is not a CIDR"},
      {[](Options& o) { o.fleet_addon_repo = "addons"; },
       "--fleet-addon-repo: \"addons\" is not a git URL"},
      {[](Options& o) { o.harvester_kubeconfig = ""; }, "--harvester-kubeconfig: required"},
      {[](Options& o) { o.rke2_api_version = "v1alpha4"; },
       "--rke2-api-version: \"v1alpha4\" is not an API version of the RKE2 providers"},
      {[](Options& o) { o.cis_profile = "stig"; },
       "--cis-profile: \"stig\" is not one of cis, cis-1.23, cis-1.5, cis-1.6"},
      {[](Options& o) { o.cis_profile = "cis-1.6"; },
       "--cis-profile: \"cis-1.6\" is for Kubernetes before 1.25, not v1.31.14"},
      {[](Options& o) {
         o.cis_profile = "cis";
         o.k8s_version = "v1.24.17";
       },
       "--cis-profile: \"cis\" is for Kubernetes 1.25 and later, not v1.24.17"},
  };
  for (const auto& c : cases) {
    Options o = Seed();
    c.change(o);
    const auto s = Validate(o);
    EXPECT_FALSE(s.ok()) << c.line;
    EXPECT_THAT(s.message(), StartsWith(c.line));
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
    EXPECT_FALSE(Build(o, kKubeconfig).ok()) << c.line;
  }
  EXPECT_TRUE(Validate(Seed()).ok());
}

// The class's compliance variables have the Go provider's names, schemas
// and defaults; --cis-profile and --fips-required set them on the Cluster,
// which otherwise leaves them to the class's defaults.
TEST(Generate, CisProfileAndFipsRequiredAreTheClassVariables) {
  const Json cc = RepoClass();
  std::map<std::string, Json> schemas;
  for (const auto& v : cc["spec"]["variables"]) {
    schemas[v["name"]] = v["schema"]["openAPIV3Schema"];
    if (v["name"] == "cisProfile" || v["name"] == "fipsRequired") {
      EXPECT_EQ(v["required"], false) << v["name"];
    }
  }
  EXPECT_EQ(schemas["cisProfile"]["type"], "string");
  EXPECT_EQ(schemas["cisProfile"]["default"], "");
  EXPECT_EQ(schemas["cisProfile"]["enum"],
            Json::array({"", "cis", "cis-1.23", "cis-1.5", "cis-1.6"}));
  EXPECT_EQ(schemas["fipsRequired"]["type"], "boolean");
  EXPECT_EQ(schemas["fipsRequired"]["default"], false);

  Options o = Seed();
  const Json plain = *Find(MustBuild(o), "Cluster");
  for (const auto& v : plain["spec"]["topology"]["variables"]) {
    EXPECT_NE(v["name"], "cisProfile");
    EXPECT_NE(v["name"], "fipsRequired");
  }
  o.cis_profile = "cis";
  o.fips_required = true;
  const Json hardened = *Find(MustBuild(o), "Cluster");
  ExpectVariablesMatchClass(hardened);
  EXPECT_EQ(Variable(hardened, "cisProfile"), "cis");
  EXPECT_EQ(Variable(hardened, "fipsRequired"), true);
  o.cis_profile = "cis-1.5";
  o.k8s_version = "v1.24.17";
  EXPECT_EQ(Variable(*Find(MustBuild(o), "Cluster"), "cisProfile"), "cis-1.5");
}

TEST(Generate, SubstituteAsClusterctl) {
  auto r = Substitute("a ${X} b ${Y:=5m} c ${X}", {{"X", "x"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "a x b 5m c x");
  EXPECT_EQ(*Substitute("${Y:=5m}", {{"Y", "1m"}}), "1m");
  EXPECT_FALSE(Substitute("${MISSING}", {}).ok());
  EXPECT_EQ(RkeVersion("1.31.4"), "v1.31.4+rke2r1");
  EXPECT_EQ(RkeVersion("v1.31.4+rke2r2"), "v1.31.4+rke2r2");
}

}  // namespace
}  // namespace caphv::generate
