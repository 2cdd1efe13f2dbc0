// File: harvester/resources.h
//
// The Harvester, KubeVirt and Rancher resources CAPHV reads or writes,
// as GroupVersionResources for kube::Client and informers.
//
// Thread safety: constants.

#pragma once

#include <string_view>

#include "kube/resource.h"

namespace caphv::harvester {

inline const kube::GroupVersionResource kVirtualMachines{"kubevirt.io", "v1", "virtualmachines",
                                                         true, "VirtualMachine"};
inline const kube::GroupVersionResource kVirtualMachineInstances{
    "kubevirt.io", "v1", "virtualmachineinstances", true, "VirtualMachineInstance"};
inline const kube::GroupVersionResource kVirtualMachineImages{
    "harvesterhci.io", "v1beta1", "virtualmachineimages", true, "VirtualMachineImage"};
inline const kube::GroupVersionResource kKeyPairs{"harvesterhci.io", "v1beta1", "keypairs", true,
                                                  "KeyPair"};
inline const kube::GroupVersionResource kIPPools{"loadbalancer.harvesterhci.io", "v1beta1",
                                                 "ippools", false, "IPPool"};
inline const kube::GroupVersionResource kLoadBalancers{"loadbalancer.harvesterhci.io", "v1beta1",
                                                       "loadbalancers", true, "LoadBalancer"};
// The API tokens of Harvester's embedded Rancher (cluster-scoped): where a
// "<name>:<key>" token of a downloaded kubeconfig keeps its expiry.
inline const kube::GroupVersionResource kRancherTokens{"management.cattle.io", "v3", "tokens",
                                                       false, "Token"};

// Annotation CAPHV puts on the Harvester objects it creates, naming the
// management-cluster object they belong to ("<namespace>/<name>"), so watch
// events map back to it.
inline constexpr std::string_view kAnnotationOwner =
    "harvester.infrastructure.cluster.x-k8s.io/owner";

// Annotation on a VM CAPHV adopted (made by the Go provider v0.2.x, or under
// another management cluster id): its running VMI still carries the labels
// it started with, and is relabelled too.
inline constexpr std::string_view kAnnotationAdopted =
    "harvester.infrastructure.cluster.x-k8s.io/adopted";

}  // namespace caphv::harvester
