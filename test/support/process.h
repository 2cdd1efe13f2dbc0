// File: test/support/process.h
//
// ChildProcess: a binary (caphv-manager, caphv-sim...) started by a test or
// a benchmark, with stdout and stderr in one log file (or stderr in a file of
// its own), stopped by signal and reaped.
// Destroying it SIGKILLs a process still running.
//
// Thread safety: one owner thread.

#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace caphv::testing {

class ChildProcess {
 public:
  // `args[0]` is the path of the binary. With `append`, the log keeps the
  // lines of earlier runs (a restarted manager); otherwise it is truncated.
  // The child's environment is this process's with `env` added or replacing.
  // A non-empty `stderr_path` keeps stderr apart from the log (stdout), in a
  // file truncated at start.
  ChildProcess(std::vector<std::string> args, std::filesystem::path log_path, bool append = false,
               const std::map<std::string, std::string>& env = {},
               const std::filesystem::path& stderr_path = {});
  ~ChildProcess() { Kill(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // True while the process has not exited (reaps it if it has).
  bool running();

  void Signal(int sig);
  // Waits up to `timeout` for the exit; the exit code (128+signal when
  // killed), or nullopt if it still runs.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // Sends `sig`, waits up to `grace`, then SIGKILLs; the exit code.
  std::optional<int> Stop(int sig, std::chrono::milliseconds grace = std::chrono::seconds(15));
  void Kill();

  std::string Log() const;
  const std::filesystem::path& log_path() const { return log_path_; }

 private:
  std::filesystem::path log_path_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

}  // namespace caphv::testing
