// File: kube/client.h
//
// Client: a small, typed-error REST client for the Kubernetes API, generic over
// GroupVersionResource. Objects are kube::Object (kube/object.h: raw JSON,
// with the metadata accessors NameOf, KeyOf, ...).
//
// Thread safety: a Client is safe to use from many threads at once; share one
// per apiserver via std::shared_ptr. Every call blocks the calling thread for
// one HTTP round trip (Watch: for the life of the stream).

#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "kube/config.h"
#include "kube/field_mask.h"
#include "kube/object.h"
#include "kube/resource.h"
#include "kube/status.h"

namespace caphv::kube {

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;        // "" = consistent read, "0" = any (watch cache)
  std::string resource_version_match;  // "", "NotOlderThan", "Exact"
  int64_t limit = 0;                   // 0 = no paging
  std::string continue_token;
  // What is built of each item (not a query: the server sends everything;
  // an informer's cache keeps a part, FieldMask::WithoutManagedFields() at
  // most). Null: everything. Must outlive the call.
  const FieldMask* keep = nullptr;
};

struct ObjectList {
  std::vector<Object> items;
  std::string resource_version;
  std::string continue_token;  // empty on the last page
};

struct WatchOptions {
  std::string resource_version;  // resume point; "" = start now ("most recent")
  std::string label_selector;
  std::string field_selector;
  bool allow_bookmarks = true;
  int timeout_seconds = 0;  // server-side timeout; 0 = server default
  // What is built of the objects of ADDED, MODIFIED and DELETED events (as
  // for ListOptions); BOOKMARK and ERROR events are built whole.
  const FieldMask* keep = nullptr;
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kAdded;
  Object object;  // for kError: the metav1.Status
};

enum class PatchType { kMerge, kJson, kStrategicMerge, kApply };

struct PatchOptions {
  std::string field_manager;  // required for kApply
  bool force = false;         // kApply only
  bool dry_run = false;
  std::string subresource;  // "", "status"
};

struct ApplyOptions {
  std::string field_manager = "caphv";
  bool force = true;
  bool dry_run = false;
  std::string subresource;  // "" or "status"
};

struct WriteOptions {
  bool dry_run = false;
  std::string field_manager;
  std::string subresource;  // Update only: "" or "status"
};

struct DeleteOptions {
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  std::string propagation_policy;  // "", "Foreground", "Background", "Orphan"
  std::optional<int64_t> grace_period_seconds;
  bool dry_run = false;
};

// Called for each watch event; return false to end the watch.
using WatchHandler = std::function<bool(WatchEvent&&)>;

class Transport;

class Client {
 public:
  static StatusOr<std::shared_ptr<Client>> New(RestConfig config);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const RestConfig& config() const { return config_; }

  StatusOr<Object> Get(const GroupVersionResource& gvr, std::string_view ns, std::string_view name,
                       std::string_view subresource = {});

  // One page (or the whole collection when options.limit == 0), decoded
  // item by item: `each` (optional) is applied to every item as soon as it
  // is decoded, so the page is never held as one parsed tree beside the
  // items made of it (an informer's transform keeps a fraction of each).
  StatusOr<ObjectList> List(const GroupVersionResource& gvr, std::string_view ns,
                            const ListOptions& options = {},
                            const std::function<void(Object&)>& each = {});

  // All pages, following continue tokens; restarts unpaged when a token
  // expires. `each` as for List: a large collection is never held whole
  // before it is compacted.
  StatusOr<ObjectList> ListAll(const GroupVersionResource& gvr, std::string_view ns,
                               ListOptions options = {}, int64_t page_size = 500,
                               const std::function<void(Object&)>& each = {});

  // Streams events until the server ends the stream (returns OK), the handler
  // returns false (OK), `stop` is requested (Cancelled) or an error occurs. A
  // 410 on connect is returned as a Gone status; an ERROR event is delivered to
  // the handler.
  Status Watch(const GroupVersionResource& gvr, std::string_view ns, const WatchOptions& options,
               const WatchHandler& handler, std::stop_token stop = {});

  // Name and namespace come from `object.metadata` when `ns` is empty.
  StatusOr<Object> Create(const GroupVersionResource& gvr, std::string_view ns,
                          const Object& object, const WriteOptions& options = {});
  // PUT; carries metadata.resourceVersion for optimistic concurrency.
  StatusOr<Object> Update(const GroupVersionResource& gvr, std::string_view ns,
                          const Object& object, const WriteOptions& options = {});
  StatusOr<Object> UpdateStatus(const GroupVersionResource& gvr, std::string_view ns,
                                const Object& object);

  // Server-side apply: PATCH application/apply-patch+yaml (JSON is YAML).
  StatusOr<Object> Apply(const GroupVersionResource& gvr, std::string_view ns, const Object& object,
                         const ApplyOptions& options = {});

  StatusOr<Object> Patch(const GroupVersionResource& gvr, std::string_view ns,
                         std::string_view name, PatchType type, const Object& patch,
                         const PatchOptions& options = {});

  // OK when deleted or already gone is NOT assumed: NotFound is returned.
  Status Delete(const GroupVersionResource& gvr, std::string_view ns, std::string_view name,
                const DeleteOptions& options = {});

  // GET an arbitrary path (discovery, /version, /readyz).
  StatusOr<Object> GetPath(std::string_view path);

  // Closes the pooled connections idle for at least
  // config().idle_connection_timeout (90 s, as client-go's transport);
  // returns how many. They are also closed when the client is next used; this
  // is for a client that may stay unused.
  size_t CloseIdleConnections();

 private:
  explicit Client(RestConfig config);
  StatusOr<Object> Do(std::string_view method, const std::string& path, const std::string& body,
                      std::string_view content_type);
  // The answer's body as it came (an error status for a non-2xx answer).
  StatusOr<std::string> DoText(std::string_view method, const std::string& path,
                               const std::string& body, std::string_view content_type);

  RestConfig config_;
  std::unique_ptr<Transport> transport_;
};

// Percent-encodes a query parameter value.
std::string UrlEncode(std::string_view s);

}  // namespace caphv::kube
