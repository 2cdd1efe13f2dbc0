// File: kube/authn_authz.h
//
// Authentication and authorisation of HTTP clients by the apiserver, as
// controller-runtime's secure metrics serving does
// (pkg/metrics/filters.WithAuthenticationAndAuthorization) and
// kube-rbac-proxy did in front of a metrics port:
//
//   auto reviewer = kube::NewApiServerAccessReviewer(client);
//   auto filter = std::make_shared<kube::AccessFilter>(std::move(reviewer));
//   server.Handle("/metrics", kube::AccessFilter::Wrap(filter, metrics_handler));
//
// Every request must carry `Authorization: Bearer <token>`. The token is
// checked with a TokenReview (authentication.k8s.io/v1, the apiserver's
// default audiences); the user it names is then checked with a
// SubjectAccessReview (authorization.k8s.io/v1) for the request's
// non-resource URL (its path) and verb (the lower-cased method, HEAD as
// "get"). Answers:
//   401 "Unauthorized"    no bearer token, a token the apiserver does not
//                         authenticate, or a TokenReview that failed
//   403 "Authorization denied for user <name>"   not allowed
//   500 "Authorization error"   the SubjectAccessReview failed
//   otherwise what `next` answers.
// Decisions are cached per token hash (kube/access_cache.h: allowed 2 min,
// refused 30 s, 1024 entries), so a scraper calling every 15 s costs one
// TokenReview and one SubjectAccessReview every 2 minutes. Failed reviews
// are not cached. The identity needs `create` on tokenreviews and
// subjectaccessreviews (ClusterRole caphv-proxy-role).
//
// Thread safety: AccessFilter::Check and the wrapped handler may run on many
// threads at once; reviewers must allow that (the apiserver one does).

#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/access_cache.h"
#include "kube/client.h"
#include "kube/clock.h"
#include "kube/http_server.h"
#include "kube/log.h"
#include "kube/status.h"

namespace caphv::kube {

struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  Object extra = Object::object();  // map of string to list of strings
};

struct TokenReviewResult {
  bool authenticated = false;
  UserInfo user;
  std::string error;  // why not authenticated
};

struct AuthorizationResult {
  bool allowed = false;
  std::string reason;
};

// The two questions asked of the apiserver. Non-OK when it could not answer.
class AccessReviewer {
 public:
  virtual ~AccessReviewer() = default;
  virtual StatusOr<TokenReviewResult> Authenticate(std::string_view token) = 0;
  virtual StatusOr<AuthorizationResult> Authorize(const UserInfo& user,
                                                  const AccessRequest& request) = 0;
};

// TokenReviews and SubjectAccessReviews created through `client`.
std::shared_ptr<AccessReviewer> NewApiServerAccessReviewer(std::shared_ptr<Client> client);

class AccessFilter {
 public:
  explicit AccessFilter(std::shared_ptr<AccessReviewer> reviewer, AccessCacheOptions cache = {},
                        const Clock& clock = Clock::Real(),
                        log::Logger logger = log::Root().WithName("authn-authz"));

  // The response refusing `request`, or nullopt when it may be served.
  std::optional<HttpResponse> Check(const HttpRequest& request);

  // `next`, behind filter->Check.
  static HttpHandler Wrap(std::shared_ptr<AccessFilter> filter, HttpHandler next);

  // TokenReviews + SubjectAccessReviews sent so far (successful or not).
  uint64_t reviews() const { return reviews_.load(); }

 private:
  std::shared_ptr<AccessReviewer> reviewer_;
  AccessDecisionCache cache_;
  log::Logger logger_;
  std::atomic<uint64_t> reviews_{0};
};

// The token of an "Authorization: Bearer <token>" header value, or "".
std::string BearerToken(std::string_view authorization);

}  // namespace caphv::kube
