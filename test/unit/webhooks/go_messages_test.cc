// Every refusal of the Go provider's webhooks, v0.2.9 and v0.10.1, comes back
// from CAPHV's webhook with the Go provider's own words.
//
// The messages are read from the Go provider's sources (its release
// archives in $CAPHV_THIRD_PARTY, else ../shared/third_party next to the
// checkout): every `errs = append(errs, "...")` and
// `errs = append(errs, fmt.Sprintf("...", ...))` of
// api/*/harvester{cluster,machine}_webhook.go, and the `fmt.Errorf` that
// joins them. Each becomes a pattern (%q a quoted string, %d a number, %v
// and %s any text). For each, a case below builds the object the Go
// provider refuses with it, and CAPHV's answer to its AdmissionReview must
// carry the sentence, inside the Go provider's "validation failed for ..."
// line. A message of a new upstream release without a case fails the test.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "../api/test_paths.h"
#include "api/codec.h"
#include "support/testbed.h"
#include "webhooks/admission.h"

namespace caphv::webhooks {
namespace {

namespace fs = std::filesystem;
using api::Json;

struct Release {
  std::string version;
  std::vector<std::string> api_versions;
};

const std::vector<Release>& Releases() {
  static const std::vector<Release> r = {{"v0.2.9", {"v1alpha1"}},
                                         {"v0.10.1", {"v1alpha1", "v1beta1"}}};
  return r;
}

// One file of a release archive; "" when it cannot be read.
std::string ReadFromArchive(const Release& release, const std::string& member) {
  return testing::ReadGoProviderFile(release.version, member).value_or("");
}

std::string GoUnquote(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) ++i;
    out += s[i];
  }
  return out;
}

// The message formats of one webhook source, and the format joining them.
struct GoMessages {
  std::set<std::string> formats;
  std::string joined;  // "validation failed for HarvesterMachine %s/%s: %s"
};

GoMessages Extract(const std::string& source) {
  GoMessages m;
  static const std::regex kLiteral(R"re(errs = append\(errs, "((?:[^"\\]|\\.)*)"\))re");
  static const std::regex kSprintf(R"re(errs = append\(errs, fmt\.Sprintf\("((?:[^"\\]|\\.)*)")re");
  static const std::regex kJoin(R"re(fmt\.Errorf\("(validation failed for (?:[^"\\]|\\.)*)")re");
  for (const auto* re : {&kLiteral, &kSprintf}) {
    for (std::sregex_iterator it(source.begin(), source.end(), *re), end; it != end; ++it) {
      m.formats.insert(GoUnquote((*it)[1].str()));
    }
  }
  std::smatch join;
  if (std::regex_search(source, join, kJoin)) m.joined = GoUnquote(join[1].str());
  return m;
}

// A Go format as a regular expression.
std::string Pattern(const std::string& format) {
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '%' && i + 1 < format.size()) {
      const char verb = format[++i];
      if (verb == 'q') {
        out += R"("(?:[^"\\]|\\.)*")";
      } else if (verb == 'd') {
        out += "[0-9]+";
      } else {
        out += ".+";
      }
    } else if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) {
      out += std::string("\\") + c;
    } else {
      out += c;
    }
  }
  return out;
}

Json ValidMachine() {
  return {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
          {"kind", "HarvesterMachine"},
          {"metadata", {{"name", "m1"}, {"namespace", "ns1"}}},
          {"spec",
           {{"cpu", 2},
            {"memory", "4Gi"},
            {"sshUser", "sles"},
            {"sshKeyPair", "key"},
            {"volumes",
             {{{"volumeType", "image"},
               {"imageName", "default/img"},
               {"volumeSize", "40Gi"},
               {"bootOrder", 1}}}},
            {"networks", {"default/vlan1"}}}}};
}

Json ValidCluster() {
  return {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
          {"kind", "HarvesterCluster"},
          {"metadata", {{"name", "c1"}, {"namespace", "ns1"}}},
          {"spec",
           {{"targetNamespace", "vms"},
            {"identitySecret", {{"name", "hv"}, {"namespace", "ns1"}}},
            {"loadBalancerConfig", {{"ipamType", "dhcp"}}}}}};
}

Json PoolNetwork() {
  return {{"ipPoolRef", "pool-a"}, {"gateway", "10.0.0.1"}, {"subnetMask", "255.255.255.0"}};
}

using Mutation = std::function<void(Json& spec)>;

// The object each Go message refuses, by kind and format.
const std::map<std::pair<std::string, std::string>, Mutation>& Cases() {
  static const std::map<std::pair<std::string, std::string>, Mutation> cases = {
      // HarvesterMachine
      {{"HarvesterMachine", "spec.cpu must be greater than 0"}, [](Json& s) { s["cpu"] = 0; }},
      {{"HarvesterMachine", "spec.memory is required"}, [](Json& s) { s["memory"] = ""; }},
      {{"HarvesterMachine", "spec.memory %q is not a valid resource quantity: %v"},
       [](Json& s) { s["memory"] = "4 GB"; }},
      {{"HarvesterMachine", "spec.sshUser is required"}, [](Json& s) { s["sshUser"] = ""; }},
      {{"HarvesterMachine", "spec.sshKeyPair is required"}, [](Json& s) { s["sshKeyPair"] = ""; }},
      {{"HarvesterMachine", "spec.volumes must contain at least one volume"},
       [](Json& s) { s["volumes"] = Json::array(); }},
      {{"HarvesterMachine", "spec.volumes[%d].volumeType must be 'image' or 'storageClass'"},
       [](Json& s) { s["volumes"][0]["volumeType"] = "disk"; }},
      {{"HarvesterMachine", "spec.volumes[%d].imageName is required when volumeType is 'image'"},
       [](Json& s) { s["volumes"][0]["imageName"] = ""; }},
      {{"HarvesterMachine",
        "spec.volumes[%d].storageClass is required when volumeType is 'storageClass'"},
       [](Json& s) {
         s["volumes"].push_back({{"volumeType", "storageClass"}, {"volumeSize", "10Gi"}});
       }},
      {{"HarvesterMachine", "spec.networks must contain at least one network"},
       [](Json& s) { s["networks"] = Json::array(); }},
      {{"HarvesterMachine", "spec.networkConfig.address is required when networkConfig is set"},
       [](Json& s) {
         s["networkConfig"] = {{"address", ""}, {"gateway", "10.0.0.1"}};
       }},
      {{"HarvesterMachine", "spec.networkConfig.gateway is required when networkConfig is set"},
       [](Json& s) {
         s["networkConfig"] = {{"address", "10.0.0.5"}, {"gateway", ""}};
       }},
      {{"HarvesterMachine", "spec.networkConfig.gateway %q is not a valid IP address"},
       [](Json& s) {
         s["networkConfig"] = {{"address", "10.0.0.5"}, {"gateway", "10.0.0.999"}};
       }},
      {{"HarvesterMachine", "spec.vmNetworkConfig and spec.networkConfig are mutually exclusive"},
       [](Json& s) {
         s["networkConfig"] = {{"address", "10.0.0.5"}, {"gateway", "10.0.0.1"}};
         s["vmNetworkConfig"] = PoolNetwork();
       }},
      {{"HarvesterMachine",
        "spec.vmNetworkConfig.ipPool is not supported at the machine level; use ipPoolRef or "
        "ipPoolRefs"},
       [](Json& s) {
         s["vmNetworkConfig"] = PoolNetwork();
         s["vmNetworkConfig"]["ipPool"] = {
             {"vmNetwork", "default/vlan1"}, {"subnet", "10.0.0.0/24"}, {"gateway", "10.0.0.1"}};
       }},
      {{"HarvesterMachine", "spec.vmNetworkConfig requires one of ipPoolRef or ipPoolRefs"},
       [](Json& s) {
         s["vmNetworkConfig"] = PoolNetwork();
         s["vmNetworkConfig"].erase("ipPoolRef");
       }},
      {{"HarvesterMachine", "spec.vmNetworkConfig.gateway is required"},
       [](Json& s) {
         s["vmNetworkConfig"] = PoolNetwork();
         s["vmNetworkConfig"]["gateway"] = "";
       }},
      {{"HarvesterMachine", "spec.vmNetworkConfig.gateway %q is not a valid IP address"},
       [](Json& s) {
         s["vmNetworkConfig"] = PoolNetwork();
         s["vmNetworkConfig"]["gateway"] = "gw";
       }},
      {{"HarvesterMachine", "spec.vmNetworkConfig.subnetMask is required"},
       [](Json& s) {
         s["vmNetworkConfig"] = PoolNetwork();
         s["vmNetworkConfig"]["subnetMask"] = "";
       }},
      {{"HarvesterMachine", "spec.vmNetworkConfig.subnetMask %q is not a valid IP address"},
       [](Json& s) {
         s["vmNetworkConfig"] = PoolNetwork();
         s["vmNetworkConfig"]["subnetMask"] = "255.255.255";
       }},
      {{"HarvesterMachine", "spec.firmware.secureBoot requires spec.firmware.efi to be true"},
       [](Json& s) {
         s["firmware"] = {{"secureBoot", true}};
       }},
      // HarvesterCluster
      {{"HarvesterCluster", "spec.targetNamespace is required"},
       [](Json& s) { s["targetNamespace"] = ""; }},
      {{"HarvesterCluster", "spec.identitySecret.name is required"},
       [](Json& s) { s["identitySecret"]["name"] = ""; }},
      {{"HarvesterCluster", "spec.identitySecret.namespace is required"},
       [](Json& s) { s["identitySecret"]["namespace"] = ""; }},
      {{"HarvesterCluster", "spec.loadBalancerConfig.ipamType must be %q or %q"},
       [](Json& s) { s["loadBalancerConfig"]["ipamType"] = "ippool"; }},
      {{"HarvesterCluster", "spec.vmNetworkConfig requires one of ipPoolRef, ipPoolRefs or ipPool"},
       [](Json& s) {
         s["vmNetworkConfig"] = PoolNetwork();
         s["vmNetworkConfig"].erase("ipPoolRef");
       }},
      {{"HarvesterCluster", "spec.vmNetworkConfig.gateway is required"},
       [](Json& s) {
         s["vmNetworkConfig"] = PoolNetwork();
         s["vmNetworkConfig"]["gateway"] = "";
       }},
      {{"HarvesterCluster", "spec.vmNetworkConfig.gateway %q is not a valid IP address"},
       [](Json& s) {
         s["vmNetworkConfig"] = PoolNetwork();
         s["vmNetworkConfig"]["gateway"] = "10.0.0.999";
       }},
      {{"HarvesterCluster", "spec.vmNetworkConfig.subnetMask is required"},
       [](Json& s) {
         s["vmNetworkConfig"] = PoolNetwork();
         s["vmNetworkConfig"]["subnetMask"] = "";
       }},
      {{"HarvesterCluster", "spec.vmNetworkConfig.subnetMask %q is not a valid IP address"},
       [](Json& s) {
         s["vmNetworkConfig"] = PoolNetwork();
         s["vmNetworkConfig"]["subnetMask"] = "mask";
       }},
  };
  return cases;
}

// Messages CAPHV words otherwise, and why (docs/differences.md).
const std::map<std::string, std::string>& Superseded() {
  static const std::map<std::string, std::string> s = {
      {"spec.vmNetworkConfig requires either ipPoolRef or ipPool",
       "v0.2.9's wording of a rule v0.10.1 words \"requires one of ipPoolRef, ipPoolRefs or "
       "ipPool\" (v0.2.9 refused a configuration naming only ipPoolRefs, which it used)"},
  };
  return s;
}

Json Review(const Json& object) {
  const std::string kind = object["kind"];
  Json review = {
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request",
       {{"uid", "0d9c1e3c-1111-4d5e-9f00-000000000001"},
        {"kind",
         {{"group", "infrastructure.cluster.x-k8s.io"}, {"version", "v1alpha1"}, {"kind", kind}}},
        {"operation", "CREATE"},
        {"namespace", object["metadata"]["namespace"]},
        {"name", object["metadata"]["name"]},
        {"object", object}}}};
  return webhooks::Review(review, kind);
}

TEST(GoMessagesTest, EveryRefusalOfTheGoProviderComesBackInItsWords) {
  int checked = 0;
  for (const auto& release : Releases()) {
    for (const auto& version : release.api_versions) {
      for (const std::string kind : {"HarvesterCluster", "HarvesterMachine"}) {
        std::string lower = kind;
        for (auto& c : lower) c = static_cast<char>(std::tolower(c));
        const std::string member = "api/" + version + "/" + lower + "_webhook.go";
        const std::string source = ReadFromArchive(release, member);
        ASSERT_FALSE(source.empty())
            << "cannot read " << member << " from the Go provider " << release.version << " in "
            << testing::ThirdPartyDir() << " (set CAPHV_THIRD_PARTY to the directory of its "
            << "release archives)";
        const GoMessages go = Extract(source);
        ASSERT_GE(go.formats.size(), 4u) << release.version << " " << member;
        ASSERT_FALSE(go.joined.empty()) << release.version << " " << member;
        for (const auto& format : go.formats) {
          SCOPED_TRACE(release.version + " " + member + ": " + format);
          if (Superseded().contains(format)) continue;
          auto it = Cases().find({kind, format});
          ASSERT_NE(it, Cases().end()) << "no case for this message of the Go provider";
          Json object = kind == "HarvesterMachine" ? ValidMachine() : ValidCluster();
          ASSERT_EQ(Review(object)["response"]["allowed"], true) << Review(object).dump();
          it->second(object["spec"]);
          const Json out = Review(object);
          ASSERT_EQ(out["response"]["allowed"], false) << "accepted: " << object.dump();
          const Json& status = out["response"]["status"];
          EXPECT_EQ(status["code"], 403);
          const std::string message = status["message"];
          // The Go provider's line: "validation failed for <Kind> ns/name: ",
          // then its sentences joined by "; ".
          std::string head = go.joined;
          head = std::regex_replace(head, std::regex("%s/%s"),
                                    "ns1/" + object["metadata"]["name"].get<std::string>());
          head = head.substr(0, head.rfind("%s"));
          EXPECT_EQ(message.rfind(head, 0), 0u) << message;
          const std::regex sentence("(^|: |; )" + Pattern(format) + "($|;| \\(|: )");
          EXPECT_TRUE(std::regex_search(message, sentence)) << message;
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 50);
}

TEST(GoMessagesTest, EverySupersededMessageIsStillTheGoProviders) {
  // An entry of Superseded() that no release has any more is stale.
  std::set<std::string> all;
  for (const auto& release : Releases()) {
    for (const std::string kind : {"harvestercluster", "harvestermachine"}) {
      for (const auto& version : release.api_versions) {
        const GoMessages go =
            Extract(ReadFromArchive(release, "api/" + version + "/" + kind + "_webhook.go"));
        all.insert(go.formats.begin(), go.formats.end());
      }
    }
  }
  for (const auto& [format, why] : Superseded()) EXPECT_TRUE(all.contains(format)) << format;
}

}  // namespace
}  // namespace caphv::webhooks
