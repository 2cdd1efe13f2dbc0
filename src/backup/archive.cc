// File: backup/archive.cc

#include "backup/archive.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace caphv::backup {
namespace {

namespace fs = std::filesystem;
using kube::Status;
using kube::StatusCode;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A directory made with mkdtemp, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "caphv-backup-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs tar with `args`; its stdout and stderr go to `log` (a file). OK, or
// kInternal with the last line tar printed.
Status RunTar(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<char*> argv;
  std::vector<std::string> all = {"tar"};
  all.insert(all.end(), args.begin(), args.end());
  argv.reserve(all.size() + 1);
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "tar", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Status(StatusCode::kInternal, std::string("cannot run tar: ") + strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status(StatusCode::kInternal, "waiting for tar failed");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  std::string out = ReadAll(log);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const auto nl = out.rfind('\n');
  if (nl != std::string::npos) out = out.substr(nl + 1);
  return Status(StatusCode::kInternal, "tar failed" + (out.empty() ? "" : ": " + out));
}

Status WriteFile(const fs::path& p, const std::string& content) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return Status(StatusCode::kInternal, "cannot write " + p.string() + ": " + strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return Status(StatusCode::kInternal, "cannot write " + p.string() + ": " + strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    return Status(StatusCode::kInternal, "cannot write " + p.string() + ": " + strerror(errno));
  }
  return Status::Ok();
}

Status WriteDirectory(const fs::path& dir, const std::map<std::string, std::string>& files) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status(StatusCode::kInternal, "cannot make " + dir.string() + ": " + ec.message());
  fs::permissions(dir, fs::perms::owner_all, ec);
  for (const auto& [name, content] : files) {
    if (Status s = WriteFile(dir / name, content); !s.ok()) return s;
  }
  return Status::Ok();
}

std::map<std::string, std::string> ReadDirectory(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && !e.is_symlink())
      out[e.path().filename().string()] = ReadAll(e.path());
  }
  return out;
}

// "a/b/backup.tar.gz" -> "backup".
std::string Stem(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (std::string_view suffix : {".tar.gz", ".tgz"}) {
    if (EndsWith(name, suffix)) return name.substr(0, name.size() - suffix.size());
  }
  return name;
}

}  // namespace

bool IsTarball(std::string_view path) {
  return EndsWith(path, ".tar.gz") || EndsWith(path, ".tgz");
}

Status WriteArchive(const std::string& path, const std::map<std::string, std::string>& files) {
  std::error_code ec;
  if (!IsTarball(path)) {
    if (fs::exists(path, ec)) {
      if (!fs::is_directory(path, ec)) {
        return Status(StatusCode::kAlreadyExists, path + " exists and is not a directory");
      }
      if (!fs::is_empty(path, ec)) {
        return Status(StatusCode::kAlreadyExists, path + " exists and is not empty");
      }
    }
    return WriteDirectory(path, files);
  }
  TempDir tmp;
  if (tmp.path().empty()) {
    return Status(StatusCode::kInternal,
                  "cannot make a temporary directory: " + std::string(strerror(errno)));
  }
  std::string stem = Stem(path);
  if (stem.empty()) stem = "caphv-backup";
  if (Status s = WriteDirectory(tmp.path() / stem, files); !s.ok()) return s;
  const std::string part = path + ".part";
  Status s = RunTar({"--sort=name", "--owner=0", "--group=0", "--numeric-owner", "-czf", part, "-C",
                     tmp.path().string(), stem},
                    tmp.path() / "tar.log");
  if (s.ok()) {
    fs::permissions(part, fs::perms::owner_read | fs::perms::owner_write, ec);
    fs::rename(part, path, ec);
    if (ec) s = Status(StatusCode::kInternal, "cannot write " + path + ": " + ec.message());
  }
  if (!s.ok()) fs::remove(part, ec);
  return s;
}

kube::StatusOr<std::map<std::string, std::string>> ReadArchive(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return Status(StatusCode::kNotFound, path + ": no such file or directory");
  if (fs::is_directory(path, ec)) return ReadDirectory(path);
  if (!fs::is_regular_file(path, ec) || !IsTarball(path)) {
    return Status(StatusCode::kInvalidArgument,
                  path + " is neither a directory nor a .tar.gz file");
  }
  TempDir tmp;
  if (tmp.path().empty()) {
    return Status(StatusCode::kInternal,
                  "cannot make a temporary directory: " + std::string(strerror(errno)));
  }
  const fs::path root = tmp.path() / "x";
  fs::create_directories(root, ec);
  if (Status s = RunTar({"-xzf", fs::absolute(path).string(), "-C", root.string(),
                         "--no-same-owner", "--no-same-permissions"},
                        tmp.path() / "tar.log");
      !s.ok()) {
    return Status(StatusCode::kInvalidArgument, path + ": " + s.message());
  }
  auto files = ReadDirectory(root);
  if (files.empty()) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      if (e.is_directory() && !e.is_symlink()) dirs.push_back(e.path());
    }
    if (dirs.size() == 1) files = ReadDirectory(dirs.front());
  }
  return files;
}

}  // namespace caphv::backup
