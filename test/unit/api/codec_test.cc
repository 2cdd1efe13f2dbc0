// Unit tests of decoding/encoding the CAPHV kinds and of YAML <-> JSON: every
// valid manifest under test/data/manifests/valid round-trips exactly.

#include "api/codec.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "api/yaml.h"
#include "test_paths.h"

namespace caphv::api {
namespace {

// Decodes `in` strictly as its kind and encodes it back.
kube::StatusOr<Json> RoundTrip(const Json& in) {
  const KindInfo* info = FindKind(in.value("kind", ""));
  if (info == nullptr) return kube::Status(kube::StatusCode::kInvalidArgument, "unknown kind");
  auto run = [&](auto tag) -> kube::StatusOr<Json> {
    using T = decltype(tag);
    auto obj = Decode<T>(in, DecodeMode::kStrict);
    if (!obj.ok()) return obj.status();
    return Encode(*obj);
  };
  switch (info->kind) {
    case Kind::kHarvesterCluster:
      return run(HarvesterCluster{});
    case Kind::kHarvesterMachine:
      return run(HarvesterMachine{});
    case Kind::kHarvesterClusterTemplate:
      return run(HarvesterClusterTemplate{});
    case Kind::kHarvesterMachineTemplate:
      return run(HarvesterMachineTemplate{});
  }
  return kube::Status(kube::StatusCode::kInternal, "unreachable");
}

TEST(CodecTest, EveryValidManifestRoundTrips) {
  int files = 0;
  std::set<std::string> kinds;
  for (const auto& entry : std::filesystem::directory_iterator(testing::ManifestDir("valid"))) {
    SCOPED_TRACE(entry.path().string());
    auto text = ReadFile(entry.path().string());
    ASSERT_TRUE(text.ok());
    auto docs = ParseYaml(*text);
    ASSERT_TRUE(docs.ok()) << docs.status().ToString();
    ASSERT_EQ(docs->size(), 1u);
    const Json& in = docs->front();
    EXPECT_EQ(in.value("apiVersion", ""), kApiVersion);
    EXPECT_FALSE(in["metadata"].value("name", "").empty());
    auto out = RoundTrip(in);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(*out, in) << "diff: " << Json::diff(in, *out).dump();
    kinds.insert(in["kind"]);
    ++files;
  }
  EXPECT_GE(files, 10);
  EXPECT_EQ(kinds.size(), 4u) << "every kind has a valid example";
}

TEST(CodecTest, TypeErrorsCarryFieldPaths) {
  Json in = {{"spec",
              {{"cpu", "two"},
               {"volumes", Json::array({{{"volumeType", "image"}, {"bootOrder", 1.5}}})},
               {"networks", "default/production"}}}};
  auto m = Decode<HarvesterMachine>(in);
  ASSERT_FALSE(m.ok());
  const std::string& msg = m.status().message();
  EXPECT_NE(msg.find("spec.cpu: expected an integer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("spec.volumes[0].bootOrder: expected an integer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("spec.networks: expected a list"), std::string::npos) << msg;
}

TEST(CodecTest, IntegerOutOfRangeIsAnError) {
  Json in = {{"spec", {{"cpu", 5000000000LL}}}};
  EXPECT_FALSE(Decode<HarvesterMachine>(in).ok());
  // Found by fuzz/admission_review_fuzzer: a float beyond int64 was cast
  // (undefined behaviour); an unsigned beyond INT64_MAX wrapped negative.
  for (const Json& cpu :
       {Json(1.33e117), Json(-1e300), Json(18446744073709551615ULL), Json(9223372036854775808.0)}) {
    auto m = Decode<HarvesterMachine>(Json{{"spec", {{"cpu", cpu}}}});
    ASSERT_FALSE(m.ok()) << cpu.dump();
    EXPECT_NE(m.status().message().find("spec.cpu: expected an integer in range"),
              std::string::npos)
        << m.status().message();
  }
  auto whole = Decode<HarvesterMachine>(Json{{"spec", {{"cpu", 4.0}}}});
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->spec.cpu, 4);
}

TEST(CodecTest, UnknownFieldsOnlyFailStrictDecoding) {
  Json in = {{"spec", {{"cpu", 2}, {"volumes", Json::array({{{"size", "1Gi"}}})}}},
             {"metadata", {{"name", "m"}, {"managedFields", Json::array({{{"manager", "x"}}})}}}};
  EXPECT_TRUE(Decode<HarvesterMachine>(in).ok());
  auto strict = Decode<HarvesterMachine>(in, DecodeMode::kStrict);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().message(), "spec.volumes[0].size: unknown field");
}

TEST(CodecTest, MetadataIsKeptVerbatim) {
  Json meta = {{"name", "m"},
               {"namespace", "default"},
               {"generation", 3},
               {"labels", Json::object()},
               {"managedFields", Json::array({{{"manager", "kubectl"}}})},
               {"ownerReferences", Json::array({{{"apiVersion", "cluster.x-k8s.io/v1beta1"},
                                                 {"kind", "Machine"},
                                                 {"name", "m"},
                                                 {"uid", "u"}}})}};
  auto m = Decode<HarvesterMachine>(Json{{"metadata", meta}, {"spec", Json::object()}});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->metadata.name, "m");
  EXPECT_EQ(m->metadata.generation, 3);
  ASSERT_EQ(m->metadata.owner_references.size(), 1u);
  EXPECT_EQ(m->metadata.owner_references[0].kind, "Machine");
  EXPECT_EQ(Encode(*m)["metadata"], meta);
  m->metadata.labels["a"] = "b";
  EXPECT_EQ(Encode(*m)["metadata"]["labels"], (Json{{"a", "b"}}));
}

TEST(CodecTest, IntegerVolumeSizeBecomesText) {
  Json in = {{"spec", {{"volumes", Json::array({{{"volumeSize", 1073741824}}})}}}};
  auto m = Decode<HarvesterMachine>(in);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->spec.volumes[0].volume_size, "1073741824");
}

TEST(CodecTest, OptionalsDistinguishAbsentFromZero) {
  HarvesterMachine m;
  EXPECT_FALSE(Encode(m).contains("status"));
  m.status.ready = false;
  EXPECT_EQ(Encode(m)["status"], (Json{{"ready", false}}));
  // Required fields are always written.
  EXPECT_EQ(Encode(m)["spec"]["cpu"], 0);
  EXPECT_EQ(Encode(m)["spec"]["volumes"], Json::array());
}

TEST(CodecTest, KindFacts) {
  EXPECT_EQ(CrdName(Kind::kHarvesterMachineTemplate),
            "harvestermachinetemplates.infrastructure.cluster.x-k8s.io");
  EXPECT_EQ(ResourceOf(Kind::kHarvesterCluster).ObjectPath("ns", "c"),
            "/apis/infrastructure.cluster.x-k8s.io/v1alpha1/namespaces/ns/harvesterclusters/c");
  ASSERT_NE(FindKind("HarvesterMachine"), nullptr);
  EXPECT_EQ(FindKind("Machine"), nullptr);
}

TEST(YamlTest, ScalarsResolveLikeKubernetes) {
  auto docs = ParseYaml(
      "a: 1\nb: \"1\"\nc: true\nd: 'yes'\ne: yes\nf: ~\ng: 1.5\nh: 255.255.0.0\n"
      "i: 10.0.0.1\nj: |\n  line1\n  line2\nk: \"\"\nl: -3\nm: 1e3\n---\n---\nz: 2\n");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 2u);
  const Json& d = docs->front();
  EXPECT_EQ(d["a"], 1);
  EXPECT_EQ(d["b"], "1");
  EXPECT_EQ(d["c"], true);
  EXPECT_EQ(d["d"], "yes");
  EXPECT_EQ(d["e"], true);
  EXPECT_TRUE(d["f"].is_null());
  EXPECT_EQ(d["g"], 1.5);
  EXPECT_EQ(d["h"], "255.255.0.0");
  EXPECT_EQ(d["i"], "10.0.0.1");
  EXPECT_EQ(d["j"], "line1\nline2\n");
  EXPECT_EQ(d["k"], "");
  EXPECT_EQ(d["l"], -3);
  EXPECT_EQ(d["m"], 1000.0);
}

TEST(YamlTest, ToYamlRoundTrips) {
  Json j = {{"strings", Json::array({"true", "1", "", "null", "1.5", "yes", "~", "a: b", "- x",
                                     "multi\nline\n", "no\nfinal break", "two\nbreaks\n\n", "#hash",
                                     "'q'", "\"dq\"", "ok"})},
            {"numbers", Json::array({0, -1, 42, 1.25})},
            {"bools", Json::array({true, false})},
            {"empty", Json::object()},
            {"list", Json::array()},
            {"null", nullptr},
            {"1", "key that looks like a number"},
            {"nested", {{"x", {{"y", Json::array({{{"z", "w"}}})}}}}}};
  auto back = ParseYaml(ToYaml(j));
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << ToYaml(j);
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(back->front(), j) << ToYaml(j);
}

TEST(YamlTest, MultiLineStringsAreLiteralBlocksWhenTheyEndWithOneLineBreak) {
  EXPECT_EQ(ToYaml(Json{{"a", "x\ny\n"}}), "a: |\n  x\n  y\n\n");
  EXPECT_EQ(ToYaml(Json{{"a", "x\ny"}}), "a: \"x\\ny\"\n");
}

TEST(YamlTest, SyntaxErrorIsAStatus) {
  auto docs = ParseYaml("a: [1, 2\n");
  EXPECT_FALSE(docs.ok());
}

}  // namespace
}  // namespace caphv::api
