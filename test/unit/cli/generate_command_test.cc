// File: test/unit/cli/generate_command_test.cc
//
// `caphv generate` as a user runs it: flags parsed by the binary's own
// command, the YAML on stdout or in -o FILE, a bad flag one line and exit 2.

#include "generate_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/yaml.h"

namespace caphv::cli {
namespace {

using ::testing::HasSubstr;

class GenerateCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("caphv-cli-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    kubeconfig_ = (dir_ / "harvester.yaml").string();
    std::ofstream(kubeconfig_) << "apiVersion: v1\nkind: Config\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `caphv generate <args>`: the exit code; out_ and err_ hold the output.
  int Run(std::vector<std::string> args) {
    CLI::App app{"caphv", "caphv"};
    app.require_subcommand(1);
    GenerateFlags flags;
    AddGenerateCommand(app, flags);
    std::vector<std::string> argv = {"generate"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::reverse(argv.begin(), argv.end());  // CLI11 takes them reversed
    out_.str("");
    err_.str("");
    try {
      app.parse(argv);
    } catch (const CLI::ParseError& e) {
      err_ << "caphv: " << e.what() << "\n";
      return 2;
    }
    std::istringstream no_input;
    return RunGenerate(flags, no_input, out_, err_);
  }

  std::vector<std::string> Required() const {
    return {"--name",
            "demo",
            "--image",
            "default/ubuntu",
            "--ssh-keypair",
            "default/key",
            "--network",
            "default/vlan100",
            "--gateway",
            "10.0.0.1",
            "--subnet-mask",
            "255.255.255.0",
            "--ip-pool",
            "pool",
            "--harvester-kubeconfig",
            kubeconfig_};
  }
  std::vector<std::string> With(std::vector<std::string> more) const {
    auto args = Required();
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  std::filesystem::path dir_;
  std::string kubeconfig_;
  std::ostringstream out_, err_;
};

TEST_F(GenerateCommand, PrintsTheObjectsAsYaml) {
  ASSERT_EQ(Run(With({"--dry-run"})), 0) << err_.str();
  EXPECT_EQ(err_.str(), "");
  auto docs = api::ParseYaml(out_.str());
  ASSERT_TRUE(docs.ok());
  ASSERT_FALSE(docs->empty());
  EXPECT_EQ((*docs)[0]["kind"], "Namespace");
  EXPECT_EQ((*docs)[0]["metadata"]["name"], "demo");
  EXPECT_THAT(out_.str(), HasSubstr("kind: ClusterClass"));
}

TEST_F(GenerateCommand, WritesTheFileOfDashO) {
  const std::string file = (dir_ / "out.yaml").string();
  ASSERT_EQ(Run(With({"-o", file, "--skip-class"})), 0) << err_.str();
  EXPECT_EQ(out_.str(), "");
  auto text = api::ReadFile(file);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("kind: Cluster\n"));
  EXPECT_THAT(*text, ::testing::Not(HasSubstr("kind: ClusterClass")));
}

TEST_F(GenerateCommand, CisProfileAndFipsRequiredBecomeTheClustersVariables) {
  ASSERT_EQ(Run(With({"--cis-profile", "cis-1.23", "--fips-required"})), 0) << err_.str();
  auto docs = api::ParseYaml(out_.str());
  ASSERT_TRUE(docs.ok());
  std::map<std::string, api::Json> variables;
  for (const auto& d : *docs) {
    if (d["kind"] != "Cluster") continue;
    for (const auto& v : d["spec"]["topology"]["variables"]) variables[v["name"]] = v["value"];
  }
  EXPECT_EQ(variables["cisProfile"], "cis-1.23");
  EXPECT_EQ(variables["fipsRequired"], true);
}

TEST_F(GenerateCommand, BadFlagsAreOneLineAndExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {With({"--gateway", "10.0.0.256"}),
       "caphv generate: --gateway: \"10.0.0.256\" is not an IPv4 address\n"},
      {With({"--cp-replicas", "three"}), "caphv: Could not convert: --cp-replicas = three\n"},
      {With({"--no-such-flag"}), "caphv: The following argument was not expected: --no-such-flag"},
      {With({"--harvester-kubeconfig", (dir_ / "missing").string()}),
       "caphv generate: --harvester-kubeconfig: cannot read"},
      {With({"--interactive", "--cni-mtu", "5"}),
       "caphv generate: --cni-mtu: 5 is not between 576 and 9000\n"},
      {With({"--apply", "--dry-run"}),
       "caphv generate: --apply and --dry-run exclude each other\n"},
      {With({"--timeout", "soon"}), "caphv: --timeout: \"soon\" is not a duration"},
      {With({"--cis-profile", "cis-2.0"}),
       "caphv generate: --cis-profile: \"cis-2.0\" is not one of cis, cis-1.23, cis-1.5, "
       "cis-1.6\n"},
  };
  for (const auto& [args, line] : cases) {
    EXPECT_EQ(Run(args), 2) << line;
    EXPECT_THAT(err_.str(), ::testing::StartsWith(line));
    const std::string err = err_.str();
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(out_.str(), "");
  }
}

}  // namespace
}  // namespace caphv::cli
