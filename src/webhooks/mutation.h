// File: webhooks/mutation.h
//
// The one mutating rule of the CAPHV kinds, a pure function from the request's
// objects to a JSON Patch (RFC 6902), served by the mutating webhook of
// webhooks/admission.h:
//
//   A placeholder never replaces a HarvesterCluster's control-plane endpoint.
//
// Once spec.controlPlaneEndpoint holds a real address (the load balancer's,
// written by CAPHV, or the user's), an UPDATE that carries a placeholder
// there — no endpoint, an empty host, 0.0.0.0 or ::, or port 0 — keeps the
// address. That UPDATE is Cluster API's topology controller re-applying a
// ClusterClass template whose HarvesterClusterTemplate has
// `controlPlaneEndpoint: {host: 0.0.0.0, port: 6443}` (the Go provider's
// class has): without the rule the spec flaps between the two, and Cluster
// API, which copies the endpoint into the Cluster once when it first sees the
// HarvesterCluster ready, can copy the placeholder. A real address may still
// replace another one (the validating rules decide).
//
// Thread safety: stateless; safe to call concurrently.

#pragma once

#include "api/codec.h"

namespace caphv::webhooks {

// The JSON Patch for a HarvesterCluster `object` (the request's object) given
// `old_object` (nullptr on CREATE): empty when nothing changes, else one
// "add" of /spec/controlPlaneEndpoint with the old address.
api::Json HarvesterClusterPatch(const api::Json& object, const api::Json* old_object);

}  // namespace caphv::webhooks
