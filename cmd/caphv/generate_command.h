// File: cmd/caphv/generate_command.h
//
// `caphv generate`: its flags (those of the Go provider's caphv-generate, plus
// -o, --kubeconfig, --timeout, --target-namespace and --skip-class) and what it does with them:
// print the objects (generate/generate.h) as YAML, or with --apply apply them
// to the management cluster with server-side apply (field manager caphv) and
// wait, showing progress, until the Cluster's control plane is initialised
// and all its Machines are Running.

#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <iosfwd>
#include <set>
#include <string>

#include "generate/generate.h"
#include "kube/client.h"

namespace caphv::cli {

struct GenerateFlags {
  generate::Options options;
  std::string output;      // -o FILE; empty: stdout
  std::string kubeconfig;  // management cluster (--apply)
  bool apply = false;
  bool dry_run = false;
  bool interactive = false;
  bool skip_class = false;
  std::chrono::seconds timeout{std::chrono::minutes(30)};
  std::chrono::milliseconds poll{std::chrono::seconds(2)};
  std::set<std::string> given;  // the flags given on the command line ("--image", ...)
};

// Registers the subcommand `generate` on `app`, filling `flags`.
CLI::App* AddGenerateCommand(CLI::App& app, GenerateFlags& flags);

// Runs it: 0 on success, 2 on a bad flag (one line on `err`), 1 on any other
// failure (apply refused, timeout). --interactive reads the answers from `in`
// (interactive_command.h); the other overload reads std::cin.
int RunGenerate(const GenerateFlags& flags, std::istream& in, std::ostream& out, std::ostream& err);
int RunGenerate(const GenerateFlags& flags, std::ostream& out, std::ostream& err);

// The YAML of `objects` to the file `output`, or to `out` when it is "" or
// "-". 0, or 1 with one line on `err`.
int WriteObjects(const std::string& output, const std::vector<api::Json>& objects,
                 std::ostream& out, std::ostream& err);

// --apply against `client`: applies `objects` in order, the class's objects
// only when the namespace lacks the class; then waits. Progress lines on
// `err`.
int ApplyAndWait(kube::Client& client, const GenerateFlags& flags,
                 const std::vector<api::Json>& objects, std::ostream& err);

}  // namespace caphv::cli
