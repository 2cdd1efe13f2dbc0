// File: cmd/caphv/doctor_checks.h
//
// What the checks of `caphv doctor` share: the resources they read, short
// timeouts (an apiserver that does not answer is one failed check within
// seconds), error texts, and the two families of checks that
// doctor_command.cc runs: HarvesterChecks (doctor_harvester.cc: the identity,
// Harvester, its image, key pair, network and pools) and ManagementChecks
// (doctor_management.cc: the providers, the ClusterClass, the webhooks).
//
// Thread safety: functions of their arguments; each opens its own clients.

#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "doctor_command.h"
#include "kube/client.h"
#include "kube/config.h"

namespace caphv::cli::doctor {

using api::Json;
using kube::GroupVersionResource;

inline const GroupVersionResource kNetworks{"k8s.cni.cncf.io", "v1",
                                            "network-attachment-definitions", true};
inline const GroupVersionResource kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                        false};
inline const GroupVersionResource kClusterRoles{"rbac.authorization.k8s.io", "v1", "clusterroles",
                                                false};
inline const GroupVersionResource kClusterClasses{"cluster.x-k8s.io", "v1beta1", "clusterclasses",
                                                  true};

// Short timeouts: a Harvester (or management cluster) that does not answer is
// a failed check within seconds.
void ShortTimeouts(kube::RestConfig& config, std::chrono::milliseconds connect);

// An error that is not the apiserver's answer (nothing listening, a timeout,
// TLS): the apiserver cannot be reached.
bool Unreachable(const kube::Status& s);

// The first line of a client error, without the request it was about
// ("GET /apis/...: ").
std::string FirstLine(std::string_view s);

// Why an apiserver could not be reached, for a check's line: the error's
// first line, and for a timeout the --timeout it ran under ("...: SSL
// connection timeout (timed out; --timeout 1s)").
std::string WhyUnreachable(const kube::Status& s, std::chrono::milliseconds timeout);

// "namespace/name" -> {namespace, name}; no slash: {"default", ref}.
std::pair<std::string, std::string> Split(const std::string& ref);

bool ConditionTrue(const Json& o, std::string_view type);

// Check `what`: the object `ref` of `gvr` exists (else `fix`).
Check Exists(kube::Client& client, const GroupVersionResource& gvr, const std::string& what,
             const std::string& ref, const std::string& fix);

std::vector<Check> HarvesterChecks(const DoctorFlags& f);
std::vector<Check> ManagementChecks(const DoctorFlags& f);

}  // namespace caphv::cli::doctor
