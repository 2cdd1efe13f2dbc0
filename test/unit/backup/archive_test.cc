// File: test/unit/backup/archive_test.cc
//
// Where a backup lives (backup/archive.h): a directory or a .tar.gz read
// back as written, readable by the owner only; a directory in use refused;
// what is neither refused.

#include "backup/archive.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/testbed.h"

namespace caphv::backup {
namespace {

namespace fs = std::filesystem;

class Archive : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("caphv-archive-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static fs::perms Perms(const fs::path& p) { return fs::status(p).permissions(); }

  fs::path dir_;
  const std::map<std::string, std::string> files_ = {
      {"manifest.yaml", "kind: CaphvBackup\n"},
      {"secrets.yaml", "apiVersion: v1\nkind: List\nitems: []\n"},
      {"clusters.cluster.x-k8s.io.yaml", std::string(100000, 'x') + "\n"}};
};

TEST_F(Archive, ADirectoryReadsBackAsWrittenOwnerOnly) {
  const fs::path out = dir_ / "backup";
  ASSERT_TRUE(WriteArchive(out.string(), files_).ok());
  EXPECT_EQ(Perms(out) & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(Perms(out / "secrets.yaml") & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  auto back = ReadArchive(out.string());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, files_);

  // Not over another backup.
  const auto again = WriteArchive(out.string(), files_);
  EXPECT_EQ(again.code(), kube::StatusCode::kAlreadyExists) << again.ToString();
  // An empty directory is fine.
  fs::create_directories(dir_ / "empty");
  EXPECT_TRUE(WriteArchive((dir_ / "empty").string(), files_).ok());
}

TEST_F(Archive, ATarballReadsBackAsWrittenUnderOneFolder) {
  const fs::path out = dir_ / "nightly.tar.gz";
  ASSERT_TRUE(WriteArchive(out.string(), files_).ok());
  EXPECT_EQ(Perms(out) & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_FALSE(fs::exists(dir_ / "nightly.tar.gz.part"));
  std::string listing;
  ASSERT_EQ(caphv::testing::RunCommand("tar -tzf '" + out.string() + "'", &listing), 0) << listing;
  EXPECT_NE(listing.find("nightly/manifest.yaml"), std::string::npos) << listing;
  auto back = ReadArchive(out.string());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, files_);

  // Written again: replaced. Files at the top of a tarball are read too.
  ASSERT_TRUE(WriteArchive(out.string(), {{"a.yaml", "a: 1\n"}}).ok());
  EXPECT_EQ(*ReadArchive(out.string()), (std::map<std::string, std::string>{{"a.yaml", "a: 1\n"}}));
  ASSERT_TRUE(WriteArchive((dir_ / "flat").string(), files_).ok());
  ASSERT_EQ(caphv::testing::RunCommand("tar -czf '" + (dir_ / "flat.tgz").string() + "' -C '" +
                                           (dir_ / "flat").string() + "' .",
                                       &listing),
            0)
      << listing;
  EXPECT_EQ(*ReadArchive((dir_ / "flat.tgz").string()), files_);
}

TEST_F(Archive, WhatIsNeitherIsRefused) {
  EXPECT_EQ(ReadArchive((dir_ / "absent").string()).status().code(), kube::StatusCode::kNotFound);
  std::ofstream(dir_ / "backup.yaml") << "a: 1\n";
  EXPECT_EQ(ReadArchive((dir_ / "backup.yaml").string()).status().code(),
            kube::StatusCode::kInvalidArgument);
  std::ofstream(dir_ / "broken.tar.gz") << "not gzip";
  auto broken = ReadArchive((dir_ / "broken.tar.gz").string());
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("tar"), std::string::npos) << broken.status().message();
  EXPECT_EQ(WriteArchive((dir_ / "backup.yaml").string(), files_).code(),
            kube::StatusCode::kAlreadyExists);
  EXPECT_FALSE(WriteArchive((dir_ / "no" / "such" / "dir" / "b.tar.gz").string(), files_).ok());
}

}  // namespace
}  // namespace caphv::backup
