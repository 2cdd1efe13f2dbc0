// File: test/unit/cli/interactive_command_test.cc
//
// `caphv generate --interactive` as a user drives it, line by line: the
// questions and the refusals on stderr, the answers from stdin, the summary
// and "Apply now?", the YAML alone on stdout; end of input is one line and
// exit 2. Harvester's lists come from a loader standing in for Harvester.

#include "interactive_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/yaml.h"

namespace caphv::cli {
namespace {

using api::Json;
using ::testing::HasSubstr;

class InteractiveCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("caphv-interactive-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    harvester_ = (dir_ / "harvester.yaml").string();
    std::ofstream(harvester_) << "apiVersion: v1\nkind: Config\n";
    // A management cluster to offer applying to (never contacted: the tests answer no).
    mgmt_ = (dir_ / "mgmt.yaml").string();
    std::ofstream(mgmt_) << "apiVersion: v1\nkind: Config\nclusters:\n- name: m\n  cluster:\n"
                            "    server: https://127.0.0.1:1\ncontexts:\n- name: m\n  context:\n"
                            "    cluster: m\n    user: u\nusers:\n- name: u\n  user:\n"
                            "    token: t\ncurrent-context: m\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  generate::Interview::Loader Loader() const {
    return [this](const std::string& path) -> kube::StatusOr<generate::Inventory> {
      if (path != harvester_) {
        return kube::Status(kube::StatusCode::kInvalidArgument,
                            "cannot read a kubeconfig from " + path);
      }
      generate::Inventory inv;
      inv.kubeconfig_path = path;
      inv.server = "https://10.0.0.5:6443";
      inv.images = generate::ImageChoices(
          {{{"metadata", {{"namespace", "default"}, {"name", "noble"}}},
            {"spec", {{"displayName", "ubuntu-24.04"}}},
            {"status", {{"conditions", {{{"type", "Imported"}, {"status", "True"}}}}}}}});
      inv.key_pairs = generate::KeyPairChoices(
          {{{"metadata", {{"namespace", "default"}, {"name", "ops-key"}}}}});
      inv.networks = generate::NetworkChoices(
          {{{"metadata", {{"namespace", "default"}, {"name", "vlan100"}}}}});
      inv.pools = generate::PoolChoices({{{"metadata", {{"name", "pool-a"}}},
                                          {"spec",
                                           {{"ranges",
                                             {{{"subnet", "10.1.0.0/24"},
                                               {"rangeStart", "10.1.0.10"},
                                               {"rangeEnd", "10.1.0.19"},
                                               {"gateway", "10.1.0.1"}}}}}}}});
      return inv;
    };
  }

  // Runs `caphv generate --interactive <args>` with `input` on stdin.
  int Run(const std::string& input, std::vector<std::string> args = {}) {
    CLI::App app{"caphv", "caphv"};
    app.require_subcommand(1);
    GenerateFlags flags;
    AddGenerateCommand(app, flags);
    args.insert(args.begin(), {"generate", "--interactive", "--kubeconfig", mgmt_});
    std::reverse(args.begin(), args.end());  // CLI11 takes them reversed
    app.parse(args);
    std::istringstream in(input);
    out_.str("");
    err_.str("");
    return RunInteractive(flags, in, out_, err_, Loader());
  }

  std::filesystem::path dir_;
  std::string harvester_, mgmt_;
  std::ostringstream out_, err_;
};

TEST_F(InteractiveCommand, AnswersToYamlOnStdoutPromptsOnStderr) {
  // The kubeconfig, the name, then the defaults but 1 control-plane machine;
  // "maybe" is not an answer to "Apply now?"; no writes the YAML.
  const std::string input = harvester_ + "\ndemo\n\n\n\n\n\n\n\n\n\n\n1\n\n\n\n\n\n\nmaybe\nn\n";
  ASSERT_EQ(Run(input), 0) << err_.str();
  const std::string err = err_.str();
  EXPECT_THAT(err,
              HasSubstr("  1) default/noble  ubuntu-24.04  Active\nVM image [default/noble]: "));
  EXPECT_THAT(err, HasSubstr("  1) pool-a  10.1.0.0/24  10 free of 10  any network\n"));
  EXPECT_THAT(err, HasSubstr("Gateway [10.1.0.1]: "));
  EXPECT_THAT(err, HasSubstr("SSH user [ubuntu]: "));
  EXPECT_THAT(
      err, ::testing::ContainsRegex("\n  Cluster +demo/demo of the ClusterClass harvester-rke2\n"));
  EXPECT_THAT(err, ::testing::ContainsRegex("\n  Management cluster +https://127.0.0.1:1\n"));
  EXPECT_THAT(err, HasSubstr("Apply now? [y/N]: "));
  EXPECT_THAT(err, HasSubstr("  answer y or n\nApply now? [y/N]: "));
  EXPECT_THAT(err, HasSubstr("writing the YAML to stdout\n"));

  // stdout: the YAML alone.
  auto docs = api::ParseYaml(out_.str());
  ASSERT_TRUE(docs.ok()) << out_.str();
  const Json* cluster = nullptr;
  for (const auto& d : *docs) {
    if (d["kind"] == "Cluster") cluster = &d;
  }
  ASSERT_NE(cluster, nullptr);
  EXPECT_EQ((*cluster)["metadata"]["namespace"], "demo");
  EXPECT_EQ((*cluster)["spec"]["topology"]["controlPlane"]["replicas"], 1);
  std::map<std::string, Json> vars;
  for (const auto& v : (*cluster)["spec"]["topology"]["variables"]) vars[v["name"]] = v["value"];
  EXPECT_EQ(vars["volumes"][0]["imageName"], "default/noble");
  EXPECT_EQ(vars["sshKeyPair"], "default/ops-key");
  EXPECT_EQ(vars["sshUser"], "ubuntu");
  EXPECT_EQ(vars["ipPoolRef"], "pool-a");
  EXPECT_EQ(vars["gateway"], "10.1.0.1");
  EXPECT_EQ(vars["subnetMask"], "255.255.255.0");
}

TEST_F(InteractiveCommand, ARefusedAnswerIsAskedAgainWithItsReason) {
  const std::string input = harvester_ + "\nNot_A_Name\ndemo\n";
  EXPECT_EQ(Run(input), 2);
  EXPECT_THAT(err_.str(), HasSubstr("Cluster name: "
                                    "  \"Not_A_Name\" is not a valid cluster name (lower case "
                                    "letters, digits and '-', at most 63)\nCluster name: "));
}

TEST_F(InteractiveCommand, EndOfInputIsOneLineAndExitTwo) {
  EXPECT_EQ(Run(harvester_ + "\ndemo\n"), 2);
  EXPECT_THAT(err_.str(),
              ::testing::EndsWith("Namespace of the Cluster (management cluster) [demo]: \n"
                                  "caphv generate: end of input at \"Namespace of the Cluster "
                                  "(management cluster)\": nothing generated\n"));
  EXPECT_EQ(out_.str(), "");
}

TEST_F(InteractiveCommand, FlagsPrefillTheDefaultsAndWriteToDashO) {
  const std::string file = (dir_ / "out.yaml").string();
  // Every default taken, the flags' among them.
  std::string input;
  for (int i = 0; i < 19; ++i) input += "\n";
  input += "\n";  // Apply now? no (the default)
  ASSERT_EQ(Run(input, {"--harvester-kubeconfig", harvester_, "--name", "prod", "--namespace",
                        "prod-ns", "--cp-replicas", "1", "--worker-replicas", "1", "-o", file}),
            0)
      << err_.str();
  EXPECT_THAT(err_.str(), HasSubstr("Harvester kubeconfig [" + harvester_ + "]: "));
  EXPECT_THAT(err_.str(), HasSubstr("Cluster name [prod]: "));
  EXPECT_THAT(err_.str(), HasSubstr("Control-plane machines [1]: "));
  EXPECT_THAT(err_.str(), HasSubstr("writing the YAML to " + file + "\n"));
  EXPECT_EQ(out_.str(), "");
  auto text = api::ReadFile(file);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("namespace: prod-ns\n"));
}

TEST_F(InteractiveCommand, WithoutInteractiveTheNameIsStillRequired) {
  CLI::App app{"caphv", "caphv"};
  app.require_subcommand(1);
  GenerateFlags flags;
  AddGenerateCommand(app, flags);
  app.parse(std::vector<std::string>{harvester_, "--harvester-kubeconfig", "generate"});
  std::istringstream in;
  EXPECT_EQ(RunGenerate(flags, in, out_, err_), 2);
  EXPECT_EQ(err_.str(), "caphv generate: --name: required\n");
}

}  // namespace
}  // namespace caphv::cli
