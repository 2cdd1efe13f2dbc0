// File: kube/signals.h
//
// SIGTERM/SIGINT handling in controller-runtime's style: the first signal
// requests stop on a process-wide std::stop_source; a second one exits the
// process with status 1.
//
//   int main() {
//     std::stop_token stop = kube::SetupSignalHandler();  // before any thread starts
//     ...
//   }
//
// SetupSignalHandler blocks the signals in the calling thread, so every
// thread created afterwards inherits the mask; a dedicated thread waits for
// them with sigwait. Call it once, first thing in main.
//
// Thread safety: SetupSignalHandler is called once; ShutdownRequested and the
// returned token may be used from any thread.

#pragma once

#include <stop_token>

namespace caphv::kube {

// Installs the handler (idempotent) and returns the process-wide stop token.
std::stop_token SetupSignalHandler();

// Requests the same stop as a first signal would (e.g. on a fatal error).
void RequestShutdown();

// True once a signal arrived or RequestShutdown() was called.
bool ShutdownRequested();

}  // namespace caphv::kube
