// Drop-in proof: every HarvesterCluster, HarvesterMachine,
// HarvesterClusterTemplate and HarvesterMachineTemplate the Go provider v0.2.9
// ships (clusterctl flavors, ClusterClass files, samples, examples, the Helm
// chart's ClusterClass, `caphv-generate` output) is applied with `kubectl
// apply --dry-run=server` through CAPHV's CRDs and webhooks, and is accepted
// exactly where the Go provider accepts it.
//
// What the Go provider accepts is measured, not assumed: its own CRDs are
// installed under a group of their own (so they sit next to ours), each
// object is dry-run through them as well, and its webhook rules
// (upstream_sources.h) judge the concrete kinds on top. The other kinds of
// those files (ClusterClass, Cluster...) are dry-run too when their CRDs are
// served, and reported without being asserted: they are Cluster API's.
//
// The Go provider's source comes from $CAPHV_GO_PROVIDER_SOURCE, else
// ../shared/third_party next to the checkout; the test is skipped, saying so,
// when it is absent.

#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "upstream_sources.h"
#include "webhook_fixture.h"

namespace caphv::testing {
namespace {

// The group the Go provider's CRDs are installed under for the comparison.
constexpr char kReferenceGroup[] = "go-reference.caphv.test";
constexpr char kOurGroup[] = "infrastructure.cluster.x-k8s.io";

bool IsOurKind(const std::string& kind) {
  return kind == "HarvesterCluster" || kind == "HarvesterMachine" ||
         kind == "HarvesterClusterTemplate" || kind == "HarvesterMachineTemplate";
}

// `s` on one line (newlines and runs of blanks as one space), at most 200 characters.
std::string OneLine(const std::string& s) {
  std::string line;
  for (char c : s) {
    if (c == '\n' || c == '\t' || c == ' ') {
      if (!line.empty() && line.back() != ' ') line += ' ';
    } else {
      line += c;
    }
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line.size() > 200 ? line.substr(0, 197) + "..." : line;
}

// Points the namespace fields of `doc` (references to objects of the same
// file, e.g. a ClusterClass's templates) that named its own namespace at
// `ns`, where the test applies it.
void MoveReferences(Json& doc, const std::string& from, const std::string& ns) {
  if (doc.is_object()) {
    for (auto& [key, value] : doc.items()) {
      if (key == "namespace" && value == from) {
        value = ns;
      } else {
        MoveReferences(value, from, ns);
      }
    }
  } else if (doc.is_array()) {
    for (auto& item : doc) MoveReferences(item, from, ns);
  }
}

class UpstreamManifestsTest : public WebhookFixture {
 protected:
  static void SetUpTestSuite() {
    WebhookFixture::SetUpTestSuite();
    if (HasFatalFailure()) return;
    std::string looked_at;
    source_ = upstream::SourceTree(dir_ / "upstream", &looked_at);
    looked_at_ = looked_at;
    if (!source_) return;
    InstallReferenceCrds();
  }

  static void TearDownTestSuite() {
    for (const auto& name : reference_crds_) {
      Kubectl("delete crd " + name + " --wait=false --ignore-not-found", nullptr);
    }
    reference_crds_.clear();
    WebhookFixture::TearDownTestSuite();
  }

  // The Go provider's CRDs, renamed into kReferenceGroup.
  static void InstallReferenceCrds() {
    fs::path out = dir_ / "reference-crds";
    fs::create_directories(out);
    for (const auto& e : fs::directory_iterator(*source_ / "config" / "crd" / "bases")) {
      auto text = api::ReadFile(e.path().string());
      ASSERT_TRUE(text.ok()) << e.path();
      auto docs = api::ParseYaml(*text);
      ASSERT_TRUE(docs.ok() && docs->size() == 1) << e.path();
      Json crd = docs->front();
      const std::string plural = crd["spec"]["names"]["plural"];
      crd["spec"]["group"] = kReferenceGroup;
      crd["metadata"] = {{"name", plural + "." + kReferenceGroup}};
      reference_crds_.push_back(plural + "." + kReferenceGroup);
      std::ofstream(out / (plural + ".json")) << crd.dump();
    }
    ASSERT_EQ(reference_crds_.size(), 4u);
    std::string log;
    ASSERT_EQ(Kubectl("apply --server-side --force-conflicts -f " + out.string(), &log), 0) << log;
    std::string names;
    for (const auto& n : reference_crds_) names += " crd/" + n;
    ASSERT_EQ(Kubectl("wait --for condition=established --timeout=60s" + names, &log), 0) << log;
  }

  // Every document of the Go provider's manifests.
  static std::vector<upstream::Doc> CollectDocs(std::string* problems) {
    std::vector<upstream::Doc> docs;
    const fs::path& src = *source_;
    const fs::path clusterctl = ClusterctlPath();
    auto vars = upstream::FlavorVariables();
    // clusterctl flavors and ClusterClass files; substitution as clusterctl
    // does it (drone/envsubst, nested ${A:-...${B}...} defaults included).
    std::vector<fs::path> flavors;
    for (const auto& dir :
         {src / "templates", src / "templates" / "clusterclass" / "rke2",
          src / "test" / "certification" / "suites" / "data" / "cluster-templates"}) {
      for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().extension() == ".yaml" &&
            e.path().filename() != "capiprovider-harvester.yaml") {
          flavors.push_back(e.path());
        }
      }
    }
    std::sort(flavors.begin(), flavors.end());
    for (const auto& f : flavors) {
      const std::string name = fs::relative(f, src).string();
      std::string text = ReadWholeFile(f);
      if (text.find("${") != std::string::npos) {
        if (!fs::exists(clusterctl)) {
          *problems += name + ": clusterctl not found at " + clusterctl.string() + "\n";
          continue;
        }
        auto v = vars;
        // A whole label line where the flavor starts it at column 0.
        if (text.find("\n${RANCHER_TURTLES_LABEL") != std::string::npos) {
          v["RANCHER_TURTLES_LABEL"] = "    cluster-api.cattle.io/rancher-auto-import: \"true\"";
        }
        std::string out;
        if (!upstream::ClusterctlGenerate(clusterctl, f, v, dir_ / "generated.yaml", &out)) {
          *problems += name + ": clusterctl generate yaml failed: " + out + "\n";
          continue;
        }
        text = out;
      }
      upstream::AddDocs(name, text, &docs, problems);
    }
    for (const auto& dir : {src / "config" / "samples", src / "examples"}) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().extension() == ".yaml" && e.path().filename() != "kustomization.yaml") {
          files.push_back(e.path());
        }
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        upstream::AddDocs(fs::relative(f, src).string(), ReadWholeFile(f), &docs, problems);
      }
    }
    upstream::AddDocs(
        "chart/caphv/templates/clusterclass.yaml (clusterClass.enabled=true)",
        upstream::RenderChartClusterClass(
            ReadWholeFile(src / "chart" / "caphv" / "templates" / "clusterclass.yaml"),
            "caphv-system"),
        &docs, problems);
    // caphv-generate, in its default (print) mode, with one pool and with
    // several pools plus a data disk.
    fs::path kubeconfig = dir_ / "harvester.kubeconfig";
    std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\nclusters: []\n";
    const std::string common =
        " --name my-cluster --image default/sles15-sp7.qcow2 --ssh-keypair default/my-ssh-key"
        " --network default/production --gateway 10.0.0.1 --subnet-mask 255.255.255.0"
        " --harvester-kubeconfig " +
        upstream::ShellQuote(kubeconfig.string()) + " --dry-run";
    for (const auto& [label, flags] : std::vector<std::pair<std::string, std::string>>{
             {"--ip-pool", " --ip-pool my-ip-pool --dns 10.0.0.53"},
             {"--ip-pool-refs --extra-disk",
              " --ip-pool-refs pool-a,pool-b --extra-disk 10Gi:longhorn"}}) {
      std::string out;
      const std::string cmd = "bash " +
                              upstream::ShellQuote((src / "bin" / "caphv-generate").string()) +
                              common + flags;
      if (!upstream::RunToFile(cmd, dir_ / "generated.yaml", &out)) {
        *problems += "caphv-generate " + label + " failed: " + out + "\n";
        continue;
      }
      upstream::AddDocs("bin/caphv-generate " + label, out, &docs, problems);
    }
    return docs;
  }

  static fs::path ClusterctlPath() {
    if (const char* env = std::getenv("CAPHV_CLUSTERCTL"); env && *env) return env;
    std::string cache;
    if (const char* c = std::getenv("CAPHV_CACHE_DIR"); c && *c) {
      cache = c;
    } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
      cache = std::string(x) + "/caphv";
    } else {
      cache = std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/caphv";
    }
    return fs::path(cache) / "bin" / "current" / "clusterctl";
  }

  // `kubectl apply --dry-run=server` of every document of `docs` (by stem,
  // each moved into this test's namespace) in one run of kubectl, as a user
  // applies a folder: a kubectl process per document cost about 0.3 s, a
  // minute for the whole set. Returns, by stem, what kubectl said about that
  // document's file when it refused it (no entry: accepted); what it said
  // about no file goes to `unattributed`.
  static std::map<std::string, std::string> DryRunApplyAll(
      const std::vector<std::pair<std::string, Json>>& docs, std::string* unattributed) {
    const fs::path batch = dir_ / "dry-run";
    fs::remove_all(batch);
    fs::create_directories(batch);
    for (const auto& [stem, doc] : docs) {
      Json placed = doc;
      placed["metadata"]["namespace"] = ns_->name();
      std::ofstream(batch / (stem + ".json")) << placed.dump(2);
    }
    std::string out;
    const int rc =
        Kubectl("apply --dry-run=server --cache-dir '" + (dir_ / "kubectl-cache").string() +
                    "' -f '" + batch.string() + "' 2>&1",
                &out);
    // kubectl names the file in each refusal ("error when creating
    // \"<file>\": ...", "... from \"<file>\": no matches for kind ..."); a
    // message may go on over the lines that follow.
    std::map<std::string, std::string> refused;
    const std::string marker = "\"" + batch.string() + "/";
    std::string* current = nullptr;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      if (const size_t at = line.find(marker); at != std::string::npos) {
        const size_t from = at + marker.size();
        const size_t to = line.find(".json\"", from);
        current = &refused[line.substr(from, to == std::string::npos ? 0 : to - from)];
        *current += line + "\n";
      } else if (line.ends_with(" (server dry run)") || line.rfind("Warning: ", 0) == 0) {
        current = nullptr;
      } else if (current) {
        *current += line + "\n";
      } else {
        *unattributed += line + "\n";
      }
    }
    if (rc != 0 && refused.empty()) *unattributed += "kubectl exited " + std::to_string(rc) + "\n";
    return refused;
  }

  static inline std::optional<fs::path> source_;
  static inline std::string looked_at_;
  static inline std::vector<std::string> reference_crds_;
};

TEST_F(UpstreamManifestsTest, AcceptedExactlyWhereTheGoProviderAcceptsThem) {
  if (!source_) {
    GTEST_SKIP() << "the Go provider's source (" << upstream::kArchive << ") is not at "
                 << looked_at_ << "; set CAPHV_GO_PROVIDER_SOURCE to run this test";
  }
  std::string problems;
  auto docs = CollectDocs(&problems);
  EXPECT_TRUE(problems.empty()) << problems;

  struct Row {
    std::string source, kind, name, go, ours;
    bool asserted = false, agree = true;
  };
  // What is dry-run: every document in this test's namespace (Cluster API's
  // kinds not asserted), and ours a second time as the Go provider's kinds
  // (its CRDs, in kReferenceGroup), all in one kubectl run.
  std::vector<std::pair<std::string, Json>> batch;
  for (size_t n = 0; n < docs.size(); ++n) {
    const Json& object = docs[n].object;
    const std::string stem = "doc-" + std::to_string(n);
    if (!IsOurKind(object.value("kind", ""))) {
      Json moved = object;
      MoveReferences(moved, moved["metadata"].value("namespace", "default"), ns_->name());
      batch.emplace_back(stem, std::move(moved));
      continue;
    }
    Json reference = object;
    reference["apiVersion"] = std::string(kReferenceGroup) + "/v1alpha1";
    batch.emplace_back(stem + "-go", std::move(reference));
    batch.emplace_back(stem, object);
  }
  std::string unattributed;
  const auto refused = DryRunApplyAll(batch, &unattributed);
  EXPECT_TRUE(unattributed.empty()) << "kubectl said of no file:\n" << unattributed;
  auto verdict = [&](const std::string& stem, std::string* out) {
    const auto it = refused.find(stem);
    if (it == refused.end()) return true;
    *out = it->second;
    return false;
  };

  std::vector<Row> rows;
  std::map<std::string, int> ours_by_kind;
  for (size_t n = 0; n < docs.size(); ++n) {
    const auto& d = docs[n];
    const std::string kind = d.object.value("kind", "");
    Row row{d.source, kind, d.object["metadata"].value("name", "?"), "", ""};
    const std::string stem = "doc-" + std::to_string(n);
    std::string out;
    if (!IsOurKind(kind)) {
      const bool ok = verdict(stem, &out);
      row.ours = ok ? "accepted" : "rejected: " + OneLine(out);
      if (!ok && (out.find("no matches for kind") != std::string::npos ||
                  out.find("ensure CRDs are installed") != std::string::npos)) {
        row.ours = "(kind not served by the test bed)";
      }
      rows.push_back(row);
      continue;
    }
    ++ours_by_kind[kind];
    row.asserted = true;
    // The Go provider: its CRD schema (through the apiserver), then its webhook.
    std::string schema_out;
    bool go_ok = verdict(stem + "-go", &schema_out);
    auto denials = upstream::GoWebhookDenials(d.object);
    row.go = !go_ok ? "rejected by its CRD: " + OneLine(schema_out)
                    : (denials.empty() ? "accepted" : "rejected by its webhook: " + denials[0]);
    go_ok = go_ok && denials.empty();
    // CAPHV: our CRDs and webhooks.
    EXPECT_EQ(d.object.value("apiVersion", ""), std::string(kOurGroup) + "/v1alpha1");
    const bool ours_ok = verdict(stem, &out);
    row.ours = ours_ok ? "accepted" : "rejected: " + OneLine(out);
    row.agree = go_ok == ours_ok;
    EXPECT_EQ(ours_ok, go_ok) << d.source << " " << kind << " " << row.name
                              << "\n  Go provider: " << row.go << "\n  CAPHV: " << out;
    rows.push_back(row);
  }

  std::cout << "\nThe Go provider's manifests through CAPHV (" << docs.size() << " objects):\n";
  for (const auto& r : rows) {
    std::cout << "  " << (r.asserted ? (r.agree ? "[same]  " : "[DIFFERS]") : "[info]  ") << " "
              << r.source << ": " << r.kind << " " << r.name << "\n";
    if (r.asserted) std::cout << "        Go provider: " << r.go << "\n";
    std::cout << "        CAPHV: " << r.ours << "\n";
  }
  // The test saw what it is about: the ClusterClass templates with their
  // empty lists and placeholder endpoint, concrete objects and samples.
  EXPECT_GE(ours_by_kind["HarvesterMachineTemplate"], 10);
  EXPECT_GE(ours_by_kind["HarvesterClusterTemplate"], 5);
  EXPECT_GE(ours_by_kind["HarvesterCluster"], 5);
  EXPECT_GE(ours_by_kind["HarvesterMachine"], 1);
  bool saw_empty_lists = false, saw_placeholder = false;
  for (const auto& d : docs) {
    const Json& o = d.object;
    const Json::json_pointer networks("/spec/template/spec/networks");
    const Json::json_pointer host("/spec/template/spec/controlPlaneEndpoint/host");
    saw_empty_lists |= o.contains(networks) && o[networks].empty();
    saw_placeholder |= o.contains(host) && o[host] == "0.0.0.0";
  }
  EXPECT_TRUE(saw_empty_lists);
  EXPECT_TRUE(saw_placeholder);
}

}  // namespace
}  // namespace caphv::testing
