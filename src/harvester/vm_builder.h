// File: harvester/vm_builder.h
//
// BuildVirtualMachine: the kubevirt.io/v1 VirtualMachine of a
// HarvesterMachine, in the shape Harvester's own tools build
// (`harvesterhci.io/volumeClaimTemplates` annotation from which Harvester
// creates the PVCs, bridge-bound Multus NICs, a NoCloud disk reading the
// cloud-init Secret), with the values Harvester's mutating webhook would set
// (memory.guest, requests from the overcommit ratios, one socket and thread)
// so the object applied is the object stored.
//
// Deterministic: PVC names are "<vm>-disk-<i>-<5 hex>" where the suffix is
// a hash of the HarvesterMachine uid and the disk index — a retry after a
// crash builds the same names, a new HarvesterMachine of the same name gets
// new ones (it never adopts the disks of a deleted predecessor).
//
// Validation failures return kInvalidArgument with the offending field path
// (spec.volumes[1].volumeSize ...).
//
// Thread safety: pure functions.

#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/harvester_machine.h"
#include "harvester/failure_domains.h"
#include "harvester/naming.h"
#include "kube/field_mask.h"
#include "kube/object.h"
#include "kube/status.h"

namespace caphv::harvester {

// A VirtualMachineImage resolved by the caller.
struct ResolvedImage {
  std::string namespace_;
  std::string name;                // metadata.name (not displayName)
  std::string storage_class_name;  // status.storageClassName ("" = "longhorn-<name>")
};

// Harvester's `overcommit-config` and reserved memory; the defaults are
// Harvester's defaults (cpu 1600 %, memory 150 %, 100Mi reserved).
struct ResourcePolicy {
  int cpu_overcommit_percent = 1600;
  int memory_overcommit_percent = 150;
  std::string reserved_memory = "100Mi";
};

struct VmInputs {
  std::string name;         // HarvesterMachine name = VM name = hostname = Node name
  std::string namespace_;   // Harvester target namespace
  std::string machine_uid;  // HarvesterMachine metadata.uid: seeds PVC names
  ClusterIdentity cluster;
  bool control_plane = false;
  api::HarvesterMachineSpec spec;
  // Images by Volume.image_name exactly as written in the spec.
  std::map<std::string, ResolvedImage> images;
  std::string cloud_init_secret_name;  // "" = CloudInitSecretName(name)
  bool network_data = true;            // the Secret carries `networkdata`
  std::string creator = "harvester";   // harvesterhci.io/creator
  ResourcePolicy resources;
  // Optional fixed MAC per network (same order as spec.networks).
  std::vector<std::string> mac_addresses;
  // The failure domain it is pinned to (harvester/failure_domains.h).
  std::optional<NodeRequirement> failure_domain;
};

// Labels of the VM (metadata and template): cluster labels, role, Harvester
// labels (vmName, creator, guestcluster), legacy machinetype on control
// planes.
std::map<std::string, std::string> VmLabels(const VmInputs& in);

// Selector of a cluster's VMs of one role (anti-affinity, load balancer).
std::map<std::string, std::string> RoleSelector(const ClusterIdentity& cluster, bool control_plane);

// Name of the PVC of disk `index`: "<vm>-disk-<index>-<hash>".
std::string PvcName(const std::string& vm_name, const std::string& machine_uid, size_t index);
// The VM a PVC named `pvc_name` is a disk of (PvcName's inverse): the name
// before its last "-disk-"; "" when there is none.
std::string DiskOwnerOf(std::string_view pvc_name);

kube::StatusOr<kube::Object> BuildVirtualMachine(const VmInputs& in);

// PVC names listed in a VM's volumeClaimTemplates annotation.
std::vector<std::string> PvcNamesOf(const kube::Object& vm);

// Merge patch setting `harvesterhci.io/removedPersistentVolumeClaims` to
// every PVC of the VM, so Harvester deletes them with it; nullopt when the VM
// lists no PVC.
std::optional<kube::Object> RemovePvcsPatch(const kube::Object& vm);

// Adoption of a VM made by someone else for this machine (the Go provider
// v0.2.x, this provider under another management cluster id): merge patches
// giving the VM (metadata and template), its running VMI and its cloud-init
// Secret the labels CAPHV's own would carry (`labels`: VmLabels for the VM
// and VMI, ClusterLabels for the Secret) and, on the VM and the Secret, the
// owner annotation `owner_key` ("<namespace>/<name>" of the HarvesterMachine);
// the VM also gets kAnnotationAdopted.
kube::Object AdoptVmPatch(const std::map<std::string, std::string>& labels,
                          const std::string& owner_key);
kube::Object AdoptVmiPatch(const std::map<std::string, std::string>& labels);
kube::Object AdoptSecretPatch(const std::map<std::string, std::string>& labels,
                              const std::string& owner_key);

// The cloud-init Secret a VM's `cloudInitNoCloud` (or `cloudInitConfigDrive`)
// volume names (secretRef, else userDataSecretRef); "" when none.
std::string CloudInitSecretOf(const kube::Object& vm);

// The addresses of a VMI a Machine may publish: those KubeVirt reports
// (status.interfaces[].ipAddress / ipAddresses) for the interfaces of the
// VMI's own spec, in report order, without duplicates, link-local
// (169.254.0.0/16, fe80::/10) or loopback addresses. The guest agent also
// reports the guest's other interfaces (cni0, flannel.1, ...) with no name:
// pod-network addresses that are not the machine's.
std::vector<std::string> VmiAddresses(const kube::Object& vmi);

// What a cache of Harvester VMs / VMIs keeps (its informer's mask): exactly
// the fields the readers above and the machine planner's views read (a VM's
// cached metadata, volumes, printable status, readiness and conditions; a
// VMI's name, uid and resourceVersion, interfaces, phase, phase transitions
// and conditions: its labels and annotations, KubeVirt's and Harvester's,
// are never read, an event on it maps through the VM of its name). A VM's domain, affinity and
// networks are what CAPHV wrote and are never read back.
const kube::FieldMask& VmFields();
const kube::FieldMask& VmiFields();

// Quantity text as Kubernetes canonicalises an integer of bytes ("4Gi",
// "100Mi", "2863311530") or of milli-cores ("2", "125m").
std::string FormatBytes(int64_t bytes);
std::string FormatMillis(int64_t millis);

}  // namespace caphv::harvester
