// File: kube/signals.cc
//
// sigwait-based signal handling; see signals.h.

#include "kube/signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <mutex>
#include <thread>

#include "kube/log.h"

namespace caphv::kube {
namespace {

std::stop_source& Source() {
  static auto* source = new std::stop_source();  // never destroyed
  return *source;
}

}  // namespace

std::stop_token SetupSignalHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
      int count = 0;
      for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        if (++count == 1) {
          log::Root().Info("Received signal, shutting down",
                           {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
          Source().request_stop();
        } else {
          log::Root().Info("Received second signal, exiting",
                           {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
          ::_exit(1);
        }
      }
    }).detach();
  });
  return Source().get_token();
}

void RequestShutdown() { Source().request_stop(); }

bool ShutdownRequested() { return Source().stop_requested(); }

}  // namespace caphv::kube
