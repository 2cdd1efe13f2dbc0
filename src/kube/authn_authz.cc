// File: kube/authn_authz.cc

#include "kube/authn_authz.h"

#include <cctype>
#include <utility>

#include "kube/resource.h"

namespace caphv::kube {
namespace {

const GroupVersionResource kTokenReviews{"authentication.k8s.io", "v1", "tokenreviews", false};
const GroupVersionResource kSubjectAccessReviews{"authorization.k8s.io", "v1",
                                                 "subjectaccessreviews", false};

class ApiServerAccessReviewer final : public AccessReviewer {
 public:
  explicit ApiServerAccessReviewer(std::shared_ptr<Client> client) : client_(std::move(client)) {}

  StatusOr<TokenReviewResult> Authenticate(std::string_view token) override {
    Object review = {{"apiVersion", "authentication.k8s.io/v1"},
                     {"kind", "TokenReview"},
                     {"spec", {{"token", std::string(token)}}}};
    CAPHV_ASSIGN_OR_RETURN(Object answer, client_->Create(kTokenReviews, "", review));
    const Object& status = answer.value("status", Object::object());
    TokenReviewResult result;
    result.authenticated = status.value("authenticated", false);
    result.error = status.value("error", "");
    const Object& user = status.value("user", Object::object());
    result.user.username = user.value("username", "");
    result.user.uid = user.value("uid", "");
    for (const auto& g : user.value("groups", Object::array())) {
      if (g.is_string()) result.user.groups.push_back(g.get<std::string>());
    }
    if (user.contains("extra") && user["extra"].is_object()) result.user.extra = user["extra"];
    if (result.authenticated && result.user.username.empty()) {
      result.authenticated = false;
      result.error = "the token review named no user";
    }
    return result;
  }

  StatusOr<AuthorizationResult> Authorize(const UserInfo& user,
                                          const AccessRequest& request) override {
    Object spec = {{"user", user.username},
                   {"groups", user.groups},
                   {"nonResourceAttributes", {{"path", request.path}, {"verb", request.verb}}}};
    if (!user.uid.empty()) spec["uid"] = user.uid;
    if (!user.extra.empty()) spec["extra"] = user.extra;
    Object review = {{"apiVersion", "authorization.k8s.io/v1"},
                     {"kind", "SubjectAccessReview"},
                     {"spec", std::move(spec)}};
    CAPHV_ASSIGN_OR_RETURN(Object answer, client_->Create(kSubjectAccessReviews, "", review));
    const Object& status = answer.value("status", Object::object());
    AuthorizationResult result;
    result.allowed = status.value("allowed", false) && !status.value("denied", false);
    result.reason = status.value("reason", "");
    if (result.reason.empty()) result.reason = status.value("evaluationError", "");
    return result;
  }

 private:
  std::shared_ptr<Client> client_;
};

HttpResponse Refuse(int status, std::string body) {
  return HttpResponse{.status = status, .body = std::move(body) + "\n"};
}

}  // namespace

std::shared_ptr<AccessReviewer> NewApiServerAccessReviewer(std::shared_ptr<Client> client) {
  return std::make_shared<ApiServerAccessReviewer>(std::move(client));
}

std::string BearerToken(std::string_view authorization) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  authorization = trim(authorization);
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size()) return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return {};
  }
  const char sep = authorization[kScheme.size()];
  if (sep != ' ' && sep != '\t') return {};
  std::string_view token = trim(authorization.substr(kScheme.size()));
  if (token.find_first_of(" \t") != std::string_view::npos) return {};
  return std::string(token);
}

AccessFilter::AccessFilter(std::shared_ptr<AccessReviewer> reviewer, AccessCacheOptions cache,
                           const Clock& clock, log::Logger logger)
    : reviewer_(std::move(reviewer)), cache_(cache, clock), logger_(std::move(logger)) {}

std::optional<HttpResponse> AccessFilter::Check(const HttpRequest& request) {
  const std::string token = BearerToken(request.Header("authorization"));
  if (token.empty()) {
    logger_.V(4).Info("Request without a bearer token", {{"remote", request.remote_address}});
    return Refuse(401, "Unauthorized");
  }
  AccessRequest wanted{.path = request.path, .verb = {}};
  for (char c : request.method) {
    wanted.verb += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (wanted.verb == "head") wanted.verb = "get";

  std::optional<AccessDecision> decision = cache_.Get(token, wanted);
  if (!decision) {
    reviews_.fetch_add(1);
    auto authn = reviewer_->Authenticate(token);
    if (!authn.ok()) {
      logger_.Error(authn.status(), "Authentication failed", {{"remote", request.remote_address}});
      return Refuse(401, "Unauthorized");
    }
    AccessDecision fresh;
    if (!authn->authenticated) {
      fresh.reason = authn->error;
    } else {
      fresh.user = authn->user.username;
      reviews_.fetch_add(1);
      auto authz = reviewer_->Authorize(authn->user, wanted);
      if (!authz.ok()) {
        logger_.Error(authz.status(), "Authorization failed",
                      {{"user", fresh.user}, {"path", wanted.path}, {"verb", wanted.verb}});
        return Refuse(500, "Authorization error");
      }
      fresh.verdict =
          authz->allowed ? AccessDecision::Verdict::kAllowed : AccessDecision::Verdict::kForbidden;
      fresh.reason = authz->reason;
    }
    if (fresh.verdict != AccessDecision::Verdict::kAllowed) {
      logger_.V(2).Info("Request refused", {{"remote", request.remote_address},
                                            {"user", fresh.user},
                                            {"path", wanted.path},
                                            {"verb", wanted.verb},
                                            {"reason", fresh.reason}});
    }
    cache_.Put(token, wanted, fresh);
    decision = std::move(fresh);
  }
  switch (decision->verdict) {
    case AccessDecision::Verdict::kAllowed:
      return std::nullopt;
    case AccessDecision::Verdict::kForbidden:
      return Refuse(403, "Authorization denied for user " + decision->user);
    case AccessDecision::Verdict::kUnauthenticated:
      break;
  }
  return Refuse(401, "Unauthorized");
}

HttpHandler AccessFilter::Wrap(std::shared_ptr<AccessFilter> filter, HttpHandler next) {
  return [filter = std::move(filter), next = std::move(next)](const HttpRequest& request) {
    if (auto refused = filter->Check(request)) return *std::move(refused);
    return next(request);
  };
}

}  // namespace caphv::kube
