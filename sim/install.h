// File: sim/install.h
//
// `caphv-sim install`: puts Harvester's API surface into an apiserver — the
// CRDs (waiting until Established), the harvester-system/harvester Deployment
// reported Available, Harvester's settings and ClusterRoles — and seeds the
// environment. Every write is a server-side apply (field manager caphv-sim),
// so installing twice is harmless.
//
// Thread safety: functions block on API calls; call from one thread.

#pragma once

#include <chrono>

#include "kube/client.h"
#include "kube/status.h"
#include "sim/env.h"

namespace caphv::sim {

kube::Status ApplyObject(kube::Client& client, const kube::Object& object);
kube::Status InstallCrds(kube::Client& client, std::chrono::seconds timeout);
kube::Status InstallHarvester(kube::Client& client);
kube::Status MarkDeploymentAvailable(kube::Client& client);
kube::Status SeedEnvironment(kube::Client& client, const Environment& env);
// All of the above, in order.
kube::Status Install(kube::Client& client, const Environment& env);

}  // namespace caphv::sim
