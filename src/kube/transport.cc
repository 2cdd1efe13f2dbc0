#include "kube/transport.h"

#include <curl/curl.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stop_token>

namespace caphv::kube {

namespace {

constexpr size_t kMaxIdleHandles = 16;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The SSL_CTX of every connection: OpenSSL keeps its record buffers (about
// 34 KiB) for the connection's life. libcurl (7.88) sets
// SSL_MODE_RELEASE_BUFFERS, with which OpenSSL allocates the 17 KiB read
// buffer at each record and frees it after; each such allocation made glibc
// merge every small block freed since the last one (malloc_consolidate, the
// manager's costliest function under perf). Watches were measured first
// (bench/provision_bench at 200 machines, two runs each, alternating:
// manager CPU 5.10 and 4.98 s against 5.29 and 5.35 s; RSS ready 0.5 MiB
// more, about 35 KiB per watch); request connections followed when a profile
// found their reads at 3.6 % of the manager's CPU while provisioning
// (bench/README.md). A pooled request connection is closed after 90 s idle,
// and its buffers with it.
CURLcode KeepRecordBuffers(CURL* /*handle*/, void* ssl_ctx, void* /*user*/) {
  SSL_CTX_clear_mode(static_cast<SSL_CTX*>(ssl_ctx), SSL_MODE_RELEASE_BUFFERS);
  return CURLE_OK;
}

struct Collected {
  std::string* body = nullptr;
  bool too_large = false;
};

size_t CollectBody(char* data, size_t size, size_t n, void* user) {
  auto* c = static_cast<Collected*>(user);
  const size_t len = size * n;
  if (c->body->size() + len > kMaxResponseBytes) {
    c->too_large = true;
    return 0;  // aborts the transfer
  }
  c->body->append(data, len);
  return len;
}

struct StreamState {
  CURL* handle = nullptr;
  const std::function<bool(std::string_view)>* on_line = nullptr;
  std::stop_token stop;
  std::string buffer;  // partial line
  std::string body;    // whole body when the status is not 200 (up to kMaxErrorBodyBytes)
  long status = 0;
  bool handler_stopped = false;
  bool too_large = false;  // one event passed kMaxWatchEventBytes
};

size_t StreamWrite(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<StreamState*>(user);
  size_t len = size * n;
  if (s->status == 0) curl_easy_getinfo(s->handle, CURLINFO_RESPONSE_CODE, &s->status);
  if (s->status != 200) {
    s->body.append(
        data, std::min(len, kMaxErrorBodyBytes - std::min(kMaxErrorBodyBytes, s->body.size())));
    return len;
  }
  s->buffer.append(data, len);
  size_t start = 0;
  while (true) {
    size_t nl = s->buffer.find('\n', start);
    if (nl == std::string::npos) break;
    std::string_view line(s->buffer.data() + start, nl - start);
    start = nl + 1;
    if (line.empty()) continue;
    if (!(*s->on_line)(line)) {
      s->handler_stopped = true;
      return 0;  // aborts the transfer
    }
  }
  s->buffer.erase(0, start);
  if (s->buffer.size() > kMaxWatchEventBytes) {
    s->too_large = true;
    return 0;  // aborts the transfer
  }
  return len;
}

// Runs one transfer on a multi handle of its own, so that a stop request
// wakes its poll at once (curl_multi_wakeup is safe from any thread).
// curl_easy_perform would notice the stop only at its next progress call,
// which for an idle watch comes up to a second later: every watch of a
// stopping manager, and every leader hand-off, waited out that second.
CURLcode PerformUntilStopped(CURL* h, const std::stop_token& stop) {
  CURLM* multi = curl_multi_init();
  if (multi == nullptr) return CURLE_OUT_OF_MEMORY;
  CURLcode result = CURLE_OK;
  if (curl_multi_add_handle(multi, h) != CURLM_OK) {
    curl_multi_cleanup(multi);
    return CURLE_FAILED_INIT;
  }
  {
    std::stop_callback wake(stop, [multi] { curl_multi_wakeup(multi); });
    int running = 1;
    while (running != 0) {
      if (curl_multi_perform(multi, &running) != CURLM_OK) {
        result = CURLE_RECV_ERROR;
        break;
      }
      if (running == 0) break;
      if (stop.stop_requested()) {
        result = CURLE_ABORTED_BY_CALLBACK;
        break;
      }
      // The timeout only bounds the wait: curl's own timers (the idle
      // limit) shorten it, a wakeup or a readable socket ends it.
      if (curl_multi_poll(multi, nullptr, 0, 1000, nullptr) != CURLM_OK) {
        result = CURLE_RECV_ERROR;
        break;
      }
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg == CURLMSG_DONE && msg->easy_handle == h) result = msg->data.result;
    }
  }  // no wakeup once the multi handle goes
  curl_multi_remove_handle(multi, h);
  curl_multi_cleanup(multi);
  return result;
}

Status CurlError(CURLcode rc, const char* errbuf, std::string_view what) {
  std::string msg =
      std::string(what) + ": " + (errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc));
  StatusCode code =
      rc == CURLE_OPERATION_TIMEDOUT ? StatusCode::kTimeout : StatusCode::kUnavailable;
  return {code, msg};
}

}  // namespace

Transport::Transport(RestConfig config) : config_(std::move(config)) {
  GlobalInit();
  constexpr std::string_view kScheme = "https://";
  if (config_.tls_server_name.empty() || !config_.server.starts_with(kScheme)) return;
  const std::string rest = config_.server.substr(kScheme.size());
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  const std::string prefix = slash == std::string::npos ? "" : rest.substr(slash);
  std::string host = authority, port = "443";
  const size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  base_url_ = std::string(kScheme) + config_.tls_server_name + ":" + port + prefix;
  connect_to_ = config_.tls_server_name + ":" + port + ":" + host + ":" + port;
  host_header_ = "Host: " + authority;
  connect_to_list_ = curl_slist_append(nullptr, connect_to_.c_str());
}

Transport::~Transport() {
  for (const IdleHandle& h : idle_) curl_easy_cleanup(static_cast<CURL*>(h.handle));
  curl_slist_free_all(static_cast<curl_slist*>(connect_to_list_));
}

std::vector<void*> Transport::TakeIdleBefore(std::chrono::steady_clock::time_point cutoff) {
  std::vector<void*> expired;
  auto end = std::find_if(idle_.begin(), idle_.end(),
                          [&](const IdleHandle& h) { return h.since >= cutoff; });
  for (auto it = idle_.begin(); it != end; ++it) expired.push_back(it->handle);
  idle_.erase(idle_.begin(), end);
  return expired;
}

size_t Transport::CloseIdle(std::chrono::steady_clock::duration idle_for) {
  std::vector<void*> expired;
  {
    std::lock_guard lock(mu_);
    expired =
        TakeIdleBefore(std::chrono::steady_clock::now() - idle_for + std::chrono::nanoseconds(1));
  }
  for (void* h : expired) curl_easy_cleanup(static_cast<CURL*>(h));
  return expired.size();
}

void* Transport::Acquire() {
  void* reused = nullptr;
  std::vector<void*> expired;
  {
    std::lock_guard lock(mu_);
    expired = TakeIdleBefore(std::chrono::steady_clock::now() - config_.idle_connection_timeout);
    if (!idle_.empty()) {
      reused = idle_.back().handle;  // the most recently used: its connection is warm
      idle_.pop_back();
    }
  }
  for (void* h : expired) curl_easy_cleanup(static_cast<CURL*>(h));
  return reused != nullptr ? reused : curl_easy_init();
}

void Transport::Release(void* handle) {
  auto* h = static_cast<CURL*>(handle);
  curl_easy_reset(h);  // keeps the connection and TLS session caches
  {
    std::lock_guard lock(mu_);
    if (idle_.size() < kMaxIdleHandles) {
      idle_.push_back({h, std::chrono::steady_clock::now()});
      return;
    }
  }
  curl_easy_cleanup(h);
}

Status Transport::Prepare(void* handle, std::string_view method, const std::string& path_and_query,
                          const std::string& body, std::string_view content_type, void** headers) {
  auto* h = static_cast<CURL*>(handle);
  std::string url = (base_url_.empty() ? config_.server : base_url_) + path_and_query;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  if (connect_to_list_ != nullptr) curl_easy_setopt(h, CURLOPT_CONNECT_TO, connect_to_list_);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(config_.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  // Request bodies are patches of a few KiB: the smallest send buffer curl
  // allows (16 KiB, not 64), which a watch holds for as long as it runs.
  curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, config_.user_agent.c_str());
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  if (!config_.ca_pem.empty()) {
    curl_blob blob{const_cast<char*>(config_.ca_pem.data()), config_.ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
  }
  if (!config_.client_cert_pem.empty()) {
    curl_blob cert{const_cast<char*>(config_.client_cert_pem.data()),
                   config_.client_cert_pem.size(), CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(config_.client_key_pem.data()), config_.client_key_pem.size(),
                  CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
  }
  if (config_.insecure_skip_tls_verify) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  curl_slist* list = nullptr;
  list = curl_slist_append(list, "Accept: application/json");
  if (!host_header_.empty()) list = curl_slist_append(list, host_header_.c_str());
  auto token = config_.BearerToken();
  if (!token.ok()) {
    curl_slist_free_all(list);
    return token.status().WithContext("reading the bearer token");
  }
  if (!token->empty()) list = curl_slist_append(list, ("Authorization: Bearer " + *token).c_str());
  if (!content_type.empty()) {
    list = curl_slist_append(list, ("Content-Type: " + std::string(content_type)).c_str());
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
  *headers = list;
  std::string m(method);
  if (m == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, m.c_str());
    if (m != "DELETE" || !body.empty()) {
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    }
  }
  return {};
}

StatusOr<TransportResponse> Transport::Do(std::string_view method,
                                          const std::string& path_and_query,
                                          const std::string& body, std::string_view content_type,
                                          std::chrono::milliseconds timeout) {
  auto* h = static_cast<CURL*>(Acquire());
  if (h == nullptr) return Status(StatusCode::kInternal, "curl_easy_init failed");
  void* headers = nullptr;
  std::string m(method);
  Status prep = Prepare(h, m, path_and_query, body, content_type, &headers);
  if (!prep.ok()) {
    Release(h);
    return prep;
  }
  char errbuf[CURL_ERROR_SIZE] = {0};
  TransportResponse resp;
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, KeepRecordBuffers);
  Collected collected{&resp.body};
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, CollectBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &collected);
  CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(static_cast<curl_slist*>(headers));
  Status err;
  if (collected.too_large) {
    err = Status(StatusCode::kUnavailable, m + " " + path_and_query + ": the answer passed " +
                                               std::to_string(kMaxResponseBytes >> 20) +
                                               " MiB; refused");
  } else if (rc != CURLE_OK) {
    err = CurlError(rc, errbuf, m + " " + path_and_query);
  }
  Release(h);
  if (!err.ok()) return err;
  resp.status = static_cast<int>(status);
  return resp;
}

StatusOr<TransportResponse> Transport::Stream(const std::string& path_and_query,
                                              const std::function<bool(std::string_view)>& on_line,
                                              std::stop_token stop,
                                              std::chrono::seconds idle_timeout) {
  // A watch holds its handle for a long time: use a fresh one, not the pool.
  CURL* h = curl_easy_init();
  if (h == nullptr) return Status(StatusCode::kInternal, "curl_easy_init failed");
  void* headers = nullptr;
  Status prep = Prepare(h, "GET", path_and_query, {}, {}, &headers);
  if (!prep.ok()) {
    curl_easy_cleanup(h);
    return prep;
  }
  StreamState state;
  state.handle = h;
  state.on_line = &on_line;
  state.stop = std::move(stop);
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, StreamWrite);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(idle_timeout.count()));
  curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, KeepRecordBuffers);
  CURLcode rc = PerformUntilStopped(h, state.stop);
  long status = state.status;
  if (status == 0) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(static_cast<curl_slist*>(headers));
  curl_easy_cleanup(h);
  if (rc == CURLE_ABORTED_BY_CALLBACK || state.stop.stop_requested()) {
    return Status(StatusCode::kCancelled, "watch stopped");
  }
  if (state.too_large) {
    return Status(StatusCode::kUnavailable, "watch " + path_and_query + ": one event passed " +
                                                std::to_string(kMaxWatchEventBytes >> 20) +
                                                " MiB; refused");
  }
  TransportResponse resp;
  resp.status = static_cast<int>(status);
  if (rc == CURLE_WRITE_ERROR && state.handler_stopped) return resp;
  if (rc != CURLE_OK) return CurlError(rc, errbuf, "watch " + path_and_query);
  resp.body = std::move(state.body);
  return resp;
}

}  // namespace caphv::kube
