// File: cmd/caphv/discovery.h
//
// Which resources an apiserver serves, from its discovery documents
// (/apis/<group>, /apis/<group>/<version>, /api/v1), read once each: what
// `caphv backup` lists (a kind whose CRD is not installed is skipped) and
// where `caphv restore` writes an object of a given apiVersion and kind.
//
// Thread safety: one thread (the command's).

#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kube/client.h"

namespace caphv::cli {

class Discovery {
 public:
  explicit Discovery(kube::Client& client) : client_(client) {}

  // The resource `resource` of `group` ("" for the core group) in the first
  // version serving it, the group's preferred version first; nullopt when
  // no version serves it.
  kube::StatusOr<std::optional<kube::GroupVersionResource>> Find(std::string_view group,
                                                                 std::string_view resource);

  // The resource of objects of `api_version` and `kind`; nullopt when the
  // apiserver does not serve them.
  kube::StatusOr<std::optional<kube::GroupVersionResource>> ForKind(const std::string& api_version,
                                                                    const std::string& kind);

 private:
  // The APIResourceList of "v1" or "<group>/<version>"; null when not served.
  kube::StatusOr<kube::Object> Resources(const std::string& group_version);

  kube::Client& client_;
  std::map<std::string, kube::Object> resources_;  // group version -> APIResourceList (or null)
  std::map<std::string, kube::Object> groups_;     // group -> APIGroup (or null)
};

}  // namespace caphv::cli
