// File: cmd/caphv/interactive_command.h
//
// `caphv generate --interactive`: the terminal side of generate/interactive.h.
// Each question (its numbered choices, then "<prompt> [<default>]: ") is
// written to `err` (stderr), the answer read as one line from `in` (stdin);
// a refused answer prints its reason and asks again. Then a summary and
// "Apply now? [y/N]" ([Y/n] with --apply): yes applies and waits as --apply
// does (progress on stderr); no writes the YAML to -o FILE or stdout. Only the
// YAML goes to stdout, so `caphv generate --interactive > cluster.yaml` (or
// -o -) holds nothing else. End of input before the last answer: one line,
// exit 2.

#pragma once

#include <iosfwd>
#include <string>

#include "generate/interactive.h"
#include "generate_command.h"

namespace caphv::cli {

// Reads the Harvester kubeconfig at `path` ("~/" is $HOME) and lists its
// images, key pairs, VM networks and IP pools (short timeouts: an
// unreachable Harvester is an error within seconds, and the path is asked
// again).
kube::StatusOr<generate::Inventory> LoadHarvesterInventory(const std::string& path);

// The interview, then apply or write. `loader` lists Harvester (tests give
// their own). Exit codes as RunGenerate.
int RunInteractive(const GenerateFlags& flags, std::istream& in, std::ostream& out,
                   std::ostream& err, const generate::Interview::Loader& loader);

}  // namespace caphv::cli
