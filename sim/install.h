// File: sim/install.h
//
// `caphv-sim install`: puts Harvester's API surface into an apiserver — the
// CRDs (waiting until Established), the harvester-system/harvester Deployment
// reported Available, Harvester's settings and ClusterRoles — and seeds the
// environment. Every write is a server-side apply (field manager caphv-sim),
// so installing twice is harmless.
//
// The KubeVirt VirtualMachine and VirtualMachineInstance CRDs are the embedded
// structural subsets (config/harvester-sim/crds), or, given a directory
// (`--kubevirt-crds`, what `hack/build-testbins.sh kubevirt-crds` writes), the
// CRDs named virtualmachines.kubevirt.io and virtualmachineinstances.kubevirt.io
// of its *.yaml files: KubeVirt's own, with the real schemas, annotated
// sim.caphv.io/kubevirt-crds=<directory>. An install without a directory keeps
// VM/VMI CRDs carrying that annotation instead of putting the subsets back.
//
// Thread safety: functions block on API calls; call from one thread.

#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/status.h"
#include "sim/env.h"

namespace caphv::sim {

kube::Status ApplyObject(kube::Client& client, const kube::Object& object);
// The KubeVirt VM and VMI CRDs of the *.yaml files in dir; NotFound when dir
// cannot be read or lacks either.
kube::StatusOr<std::vector<kube::Object>> KubeVirtCrdsFrom(const std::string& dir);
// The embedded CRDs, the KubeVirt ones replaced by those of kubevirt_crds_dir
// when it is not empty (or kept as installed, see above, when it is).
kube::Status InstallCrds(kube::Client& client, std::chrono::seconds timeout,
                         const std::string& kubevirt_crds_dir = "");
kube::Status InstallHarvester(kube::Client& client);
kube::Status MarkDeploymentAvailable(kube::Client& client);
kube::Status SeedEnvironment(kube::Client& client, const Environment& env);
// All of the above, in order.
kube::Status Install(kube::Client& client, const Environment& env,
                     const std::string& kubevirt_crds_dir = "");

}  // namespace caphv::sim
