// File: test/unit/cli/backup_restore_command_test.cc
//
// `caphv backup` and `caphv restore` as a user runs them, for what needs no
// management cluster: a bad flag, an -o already in use, a backup that is
// missing or unreadable — one line, exit 2, before any apiserver is
// contacted. (Against the bed: test/integration/e2e/disaster_recovery_test.cc.)

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backup_command.h"
#include "restore_command.h"

namespace caphv::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class BackupRestoreCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("caphv-backup-cli-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    // A kubeconfig of an apiserver that is not there: reached only when a
    // test gets that far.
    kubeconfig_ = (dir_ / "mgmt.yaml").string();
    std::ofstream(kubeconfig_)
        << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
           "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"
           "contexts:\n- name: c\n  context: {cluster: c, user: u}\n"
           "users:\n- name: u\n  user: {token: t}\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `caphv <command> <args>`: the exit code; out_ and err_ hold the output.
  int Run(const std::string& command, std::vector<std::string> args) {
    CLI::App app{"caphv", "caphv"};
    app.require_subcommand(1);
    BackupFlags backup;
    AddBackupCommand(app, backup);
    RestoreFlags restore;
    AddRestoreCommand(app, restore);
    std::vector<std::string> argv = {command};
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
    return command == "backup" ? RunBackup(backup, out_, err_) : RunRestore(restore, out_, err_);
  }

  // One line on stderr, nothing on stdout.
  void ExpectOneLine() const {
    const std::string err = err_.str();
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(out_.str(), "");
  }

  std::filesystem::path dir_;
  std::string kubeconfig_;
  std::ostringstream out_, err_;
};

TEST_F(BackupRestoreCommand, BackupRefusesBadFlagsInOneLine) {
  EXPECT_EQ(Run("backup", {"--kubeconfig", kubeconfig_}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--output"));
  ExpectOneLine();

  EXPECT_EQ(
      Run("backup", {"--kubeconfig", kubeconfig_, "-n", "prod", "-A", "-o", (dir_ / "b").string()}),
      2);
  EXPECT_EQ(err_.str(), "caphv backup: -n and -A exclude each other\n");

  // Not into a directory that holds something: files of two backups would mix.
  std::filesystem::create_directories(dir_ / "used");
  std::ofstream(dir_ / "used" / "x") << "x";
  EXPECT_EQ(Run("backup", {"--kubeconfig", kubeconfig_, "-o", (dir_ / "used").string()}), 2);
  EXPECT_THAT(err_.str(), StartsWith("caphv backup: -o: "));
  EXPECT_THAT(err_.str(), HasSubstr("is not an empty directory"));
  ExpectOneLine();

  EXPECT_EQ(Run("backup", {"--kubeconfig", (dir_ / "absent.yaml").string(), "-o",
                           (dir_ / "b.tar.gz").string()}),
            2);
  EXPECT_THAT(err_.str(), StartsWith("caphv backup: --kubeconfig: "));
  ExpectOneLine();
}

TEST_F(BackupRestoreCommand, BackupOfAnUnreachableManagementClusterFailsAndWritesNothing) {
  const auto out = dir_ / "b.tar.gz";
  EXPECT_EQ(Run("backup", {"--kubeconfig", kubeconfig_, "-o", out.string()}), 1);
  EXPECT_THAT(err_.str(), StartsWith("caphv backup: reading the management cluster "));
  ExpectOneLine();
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(BackupRestoreCommand, RestoreRefusesAMissingOrBadBackupInOneLine) {
  EXPECT_EQ(Run("restore", {"--kubeconfig", kubeconfig_}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--from"));
  ExpectOneLine();

  EXPECT_EQ(Run("restore", {"--kubeconfig", kubeconfig_, "-f", (dir_ / "absent").string()}), 2);
  EXPECT_THAT(err_.str(), StartsWith("caphv restore: -f: "));
  EXPECT_THAT(err_.str(), HasSubstr("no such file or directory"));
  ExpectOneLine();

  const auto bad = dir_ / "bad";
  std::filesystem::create_directories(bad);
  std::ofstream(bad / "machines.cluster.x-k8s.io.yaml")
      << "apiVersion: v1\nkind: List\nitems:\n- apiVersion: cluster.x-k8s.io/v1beta1\n"
         "  kind: Machine\n  metadata: {namespace: prod}\n";
  EXPECT_EQ(Run("restore", {"--kubeconfig", kubeconfig_, "-f", bad.string()}), 2);
  EXPECT_EQ(err_.str(), "caphv restore: " + bad.string() +
                            ": machines.cluster.x-k8s.io.yaml: item 1 (Machine) has no "
                            "metadata.name\n");

  std::ofstream(dir_ / "broken.tar.gz") << "not a tarball";
  EXPECT_EQ(Run("restore", {"--kubeconfig", kubeconfig_, "-f", (dir_ / "broken.tar.gz").string()}),
            2);
  EXPECT_THAT(err_.str(), StartsWith("caphv restore: -f: "));
  ExpectOneLine();

  EXPECT_EQ(Run("restore", {"--kubeconfig", kubeconfig_, "-f", bad.string(), "--timeout", "soon"}),
            2);
  EXPECT_THAT(err_.str(), HasSubstr("--timeout"));
  ExpectOneLine();
}

TEST_F(BackupRestoreCommand, RestoreOntoAnUnreachableManagementClusterWritesNothing) {
  const auto good = dir_ / "good";
  std::filesystem::create_directories(good);
  std::ofstream(good / "secrets.yaml")
      << "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n"
         "  metadata: {name: s, namespace: prod}\n";
  EXPECT_EQ(Run("restore", {"--kubeconfig", kubeconfig_, "-f", good.string(), "--dry-run"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("caphv restore: "));
  EXPECT_EQ(out_.str(), "");
}

}  // namespace
}  // namespace caphv::cli
