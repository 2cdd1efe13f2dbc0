#include "kube/client.h"

#include <iterator>

#include "kube/transport.h"
#include "kube/untrusted_json.h"

namespace caphv::kube {

namespace {

constexpr std::string_view kJson = "application/json";

std::string PatchContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return std::string(kJson);
}

// Appends "k=v" to a query string being built.
void AddQuery(std::string& q, std::string_view key, std::string_view value) {
  if (value.empty()) return;
  q += q.empty() ? '?' : '&';
  q += key;
  q += '=';
  q += UrlEncode(value);
}

std::string ListQuery(const ListOptions& o) {
  std::string q;
  AddQuery(q, "labelSelector", o.label_selector);
  AddQuery(q, "fieldSelector", o.field_selector);
  AddQuery(q, "resourceVersion", o.resource_version);
  AddQuery(q, "resourceVersionMatch", o.resource_version_match);
  if (o.limit > 0) AddQuery(q, "limit", std::to_string(o.limit));
  AddQuery(q, "continue", o.continue_token);
  return q;
}

std::string_view NamespaceFor(const GroupVersionResource& gvr, std::string_view ns,
                              const Object& object) {
  if (!gvr.namespaced) return {};
  if (!ns.empty()) return ns;
  auto m = object.find("metadata");
  if (m != object.end() && m->is_object()) {
    auto n = m->find("namespace");
    if (n != m->end() && n->is_string()) return n->get_ref<const std::string&>();
  }
  return {};
}

Status NotJson(std::string_view method, const std::string& path) {
  return Status(StatusCode::kInternal, "response to " + std::string(method) + " " + path +
                                           " is not JSON (or nests deeper than " +
                                           std::to_string(kMaxJsonDepth) + " levels)");
}

WatchEvent::Type EventType(std::string_view t) {
  if (t == "ADDED") return WatchEvent::Type::kAdded;
  if (t == "MODIFIED") return WatchEvent::Type::kModified;
  if (t == "DELETED") return WatchEvent::Type::kDeleted;
  if (t == "BOOKMARK") return WatchEvent::Type::kBookmark;
  return WatchEvent::Type::kError;
}

}  // namespace

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Client::Client(RestConfig config)
    : config_(std::move(config)), transport_(std::make_unique<Transport>(config_)) {}

Client::~Client() = default;

StatusOr<std::shared_ptr<Client>> Client::New(RestConfig config) {
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    return Status(StatusCode::kInvalidArgument,
                  "server \"" + config.server + "\" is not an http(s) URL");
  }
  return std::shared_ptr<Client>(new Client(std::move(config)));
}

StatusOr<std::string> Client::DoText(std::string_view method, const std::string& path,
                                     const std::string& body, std::string_view content_type) {
  CAPHV_ASSIGN_OR_RETURN(TransportResponse resp,
                         transport_->Do(method, path, body, content_type, config_.request_timeout));
  if (resp.status < 200 || resp.status >= 300) return Status::FromHttp(resp.status, resp.body);
  return std::move(resp.body);
}

StatusOr<Object> Client::Do(std::string_view method, const std::string& path,
                            const std::string& body, std::string_view content_type) {
  CAPHV_ASSIGN_OR_RETURN(std::string text, DoText(method, path, body, content_type));
  if (text.empty()) return Object::object();
  auto j = ParseUntrustedJson(text);
  if (j.is_discarded()) return NotJson(method, path);
  return j;
}

StatusOr<Object> Client::Get(const GroupVersionResource& gvr, std::string_view ns,
                             std::string_view name, std::string_view subresource) {
  return Do("GET", gvr.ObjectPath(ns, name, subresource), {}, {});
}

StatusOr<ObjectList> Client::List(const GroupVersionResource& gvr, std::string_view ns,
                                  const ListOptions& options,
                                  const std::function<void(Object&)>& each) {
  const std::string path = gvr.CollectionPath(ns) + ListQuery(options);
  CAPHV_ASSIGN_OR_RETURN(std::string text, DoText("GET", path, {}, {}));
  ObjectList list;
  // Items of a list carry no apiVersion/kind: restore them so each object
  // stands alone (as client-go's decoding does). The list's kind may come
  // after its items (custom resources' lists sort their keys).
  std::vector<size_t> kindless;
  auto take = [&](Object&& item) {
    if (!item.contains("apiVersion")) item["apiVersion"] = gvr.ApiVersion();
    if (!item.contains("kind")) {
      if (gvr.kind.empty()) {
        kindless.push_back(list.items.size());
      } else {
        item["kind"] = gvr.kind;
      }
    }
    if (each) each(item);
    list.items.push_back(std::move(item));
  };
  Object rest = ParseUntrustedList(text, take, nullptr, options.keep);
  if (rest.is_discarded() || !rest.is_object()) return NotJson("GET", path);
  if (auto m = rest.find("metadata"); m != rest.end() && m->is_object()) {
    list.resource_version = m->value("resourceVersion", "");
    list.continue_token = m->value("continue", "");
  }
  std::string kind = rest.value("kind", "");
  if (kind.size() > 4 && kind.compare(kind.size() - 4, 4, "List") == 0) {
    kind.resize(kind.size() - 4);
    for (size_t i : kindless) list.items[i]["kind"] = kind;
  }
  return list;
}

StatusOr<ObjectList> Client::ListAll(const GroupVersionResource& gvr, std::string_view ns,
                                     ListOptions options, int64_t page_size,
                                     const std::function<void(Object&)>& each) {
  ObjectList all;
  options.limit = page_size;
  options.continue_token.clear();
  while (true) {
    auto page = List(gvr, ns, options, each);
    if (!page.ok()) {
      if (page.status().IsGone() && !options.continue_token.empty()) {
        // The continue token expired mid-way: one full, unpaged list instead.
        ListOptions full = options;
        full.limit = 0;
        full.continue_token.clear();
        full.resource_version = "";
        return List(gvr, ns, full, each);
      }
      return page.status();
    }
    if (all.items.empty()) {
      all.items = std::move(page->items);
    } else {
      all.items.insert(all.items.end(), std::make_move_iterator(page->items.begin()),
                       std::make_move_iterator(page->items.end()));
    }
    all.resource_version = page->resource_version;
    if (page->continue_token.empty()) break;
    options.continue_token = page->continue_token;
    // resourceVersion must not be combined with continue.
    options.resource_version.clear();
    options.resource_version_match.clear();
  }
  return all;
}

Status Client::Watch(const GroupVersionResource& gvr, std::string_view ns,
                     const WatchOptions& options, const WatchHandler& handler,
                     std::stop_token stop) {
  std::string q = "?watch=1";
  if (options.allow_bookmarks) q += "&allowWatchBookmarks=true";
  if (!options.resource_version.empty())
    q += "&resourceVersion=" + UrlEncode(options.resource_version);
  if (!options.label_selector.empty()) q += "&labelSelector=" + UrlEncode(options.label_selector);
  if (!options.field_selector.empty()) q += "&fieldSelector=" + UrlEncode(options.field_selector);
  if (options.timeout_seconds > 0)
    q += "&timeoutSeconds=" + std::to_string(options.timeout_seconds);

  Status decode_error;
  auto on_line = [&](std::string_view line) {
    auto j = ParseUntrustedJson(line, nullptr, JsonKeep{kWatchEventObject, options.keep});
    if (j.is_discarded() || !j.is_object()) {
      decode_error = Status(StatusCode::kInternal, "undecodable watch event");
      return false;
    }
    WatchEvent ev;
    ev.type = EventType(j.value("type", ""));
    // A bookmark's or an error's object is no object of the collection: the
    // mask may leave out what it carries (a Status's code and reason).
    if (options.keep != nullptr && ev.type != WatchEvent::Type::kAdded &&
        ev.type != WatchEvent::Type::kModified && ev.type != WatchEvent::Type::kDeleted) {
      j = ParseUntrustedJson(line);
    }
    if (auto o = j.find("object"); o != j.end()) ev.object = std::move(*o);
    return handler(std::move(ev));
  };
  auto idle = std::chrono::seconds(std::max(options.timeout_seconds, 300) + 60);
  CAPHV_ASSIGN_OR_RETURN(
      TransportResponse resp,
      transport_->Stream(gvr.CollectionPath(ns) + q, on_line, std::move(stop), idle));
  if (!decode_error.ok()) return decode_error;
  if (resp.status != 200) return Status::FromHttp(resp.status, resp.body);
  return {};
}

StatusOr<Object> Client::Create(const GroupVersionResource& gvr, std::string_view ns,
                                const Object& object, const WriteOptions& options) {
  std::string q;
  if (options.dry_run) AddQuery(q, "dryRun", "All");
  AddQuery(q, "fieldManager", options.field_manager);
  return Do("POST", gvr.CollectionPath(NamespaceFor(gvr, ns, object)) + q, object.dump(), kJson);
}

StatusOr<Object> Client::Update(const GroupVersionResource& gvr, std::string_view ns,
                                const Object& object, const WriteOptions& options) {
  std::string q;
  if (options.dry_run) AddQuery(q, "dryRun", "All");
  AddQuery(q, "fieldManager", options.field_manager);
  std::string name = NameOf(object);
  if (name.empty()) return Status(StatusCode::kInvalidArgument, "update: object has no name");
  return Do("PUT", gvr.ObjectPath(NamespaceFor(gvr, ns, object), name, options.subresource) + q,
            object.dump(), kJson);
}

StatusOr<Object> Client::UpdateStatus(const GroupVersionResource& gvr, std::string_view ns,
                                      const Object& object) {
  WriteOptions o;
  o.subresource = "status";
  return Update(gvr, ns, object, o);
}

StatusOr<Object> Client::Apply(const GroupVersionResource& gvr, std::string_view ns,
                               const Object& object, const ApplyOptions& options) {
  std::string name = NameOf(object);
  if (name.empty()) return Status(StatusCode::kInvalidArgument, "apply: object has no name");
  if (options.field_manager.empty()) {
    return Status(StatusCode::kInvalidArgument, "apply: a field manager is required");
  }
  PatchOptions p;
  p.field_manager = options.field_manager;
  p.force = options.force;
  p.dry_run = options.dry_run;
  p.subresource = options.subresource;
  return Patch(gvr, NamespaceFor(gvr, ns, object), name, PatchType::kApply, object, p);
}

StatusOr<Object> Client::Patch(const GroupVersionResource& gvr, std::string_view ns,
                               std::string_view name, PatchType type, const Object& patch,
                               const PatchOptions& options) {
  std::string q;
  if (options.dry_run) AddQuery(q, "dryRun", "All");
  AddQuery(q, "fieldManager", options.field_manager);
  if (type == PatchType::kApply && options.force) AddQuery(q, "force", "true");
  return Do("PATCH", gvr.ObjectPath(ns, name, options.subresource) + q, patch.dump(),
            PatchContentType(type));
}

Status Client::Delete(const GroupVersionResource& gvr, std::string_view ns, std::string_view name,
                      const DeleteOptions& options) {
  Object body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (options.precondition_uid || options.precondition_resource_version) {
    Object pre = Object::object();
    if (options.precondition_uid) pre["uid"] = *options.precondition_uid;
    if (options.precondition_resource_version) {
      pre["resourceVersion"] = *options.precondition_resource_version;
    }
    body["preconditions"] = pre;
  }
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (options.dry_run) body["dryRun"] = Object::array({"All"});
  return Do("DELETE", gvr.ObjectPath(ns, name), body.dump(), kJson).status();
}

size_t Client::CloseIdleConnections() {
  return transport_->CloseIdle(config_.idle_connection_timeout);
}

StatusOr<Object> Client::GetPath(std::string_view path) {
  return Do("GET", std::string(path), {}, {});
}

}  // namespace caphv::kube
