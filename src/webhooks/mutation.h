// File: webhooks/mutation.h
//
// The mutating rules of the CAPHV kinds, pure functions from the request's
// objects to a JSON Patch (RFC 6902), served by the mutating webhooks of
// webhooks/admission.h:
//
// 1. A placeholder never replaces a HarvesterCluster's control-plane endpoint
//    (UPDATE).
//
//    Once spec.controlPlaneEndpoint holds a real address (the load
//    balancer's, written by CAPHV, or the user's), an UPDATE that carries a
//    placeholder there — no endpoint, an empty host, 0.0.0.0 or ::, or port
//    0 — keeps the address. That UPDATE is Cluster API's topology controller
//    re-applying a ClusterClass template whose HarvesterClusterTemplate has
//    `controlPlaneEndpoint: {host: 0.0.0.0, port: 6443}` (the Go provider's
//    class has): without the rule the spec flaps between the two, and Cluster
//    API, which copies the endpoint into the Cluster once when it first sees
//    the HarvesterCluster ready, can copy the placeholder. A real address may
//    still replace another one (the validating rules decide).
//
// 2. A HarvesterMachine is created with CAPHV's finalizer (CREATE).
//
//    The machine controller puts the finalizer on before it creates anything
//    on Harvester; a machine created with it saves that write (one of the
//    six a machine otherwise costs the management apiserver, and the
//    reconcile it brings). Only a machine this manager reconciles gets it
//    (`MachineScope`: its --namespace and --watch-filter), since a finalizer
//    nobody lifts would block the machine's deletion for ever; one already
//    being deleted or carrying either of the finalizer's names is left
//    alone. Without the webhook (`--enable-webhooks` off, or the chart's
//    webhooks disabled) the controller adds the finalizer as before.
//
// Thread safety: stateless; safe to call concurrently.

#pragma once

#include <string>
#include <string_view>

#include "api/codec.h"

namespace caphv::webhooks {

// The JSON Patch for a HarvesterCluster `object` (the request's object) given
// `old_object` (nullptr on CREATE): empty when nothing changes, else one
// "add" of /spec/controlPlaneEndpoint with the old address.
api::Json HarvesterClusterPatch(const api::Json& object, const api::Json* old_object);

// Which HarvesterMachines the manager serving the webhook reconciles.
struct MachineScope {
  std::string ns;            // --namespace; empty: every namespace
  std::string watch_filter;  // --watch-filter; empty: no label required
};

// The JSON Patch for a HarvesterMachine being created in namespace `ns` (the
// request's; the object may not name it): empty when nothing changes, else
// one "add" of kMachineFinalizer to /metadata/finalizers.
api::Json HarvesterMachineCreatePatch(const api::Json& object, std::string_view ns,
                                      const MachineScope& scope);

}  // namespace caphv::webhooks
