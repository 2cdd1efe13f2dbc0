// Unit tests of AccessFilter: the answers a metrics client gets for each
// kind of token, and that a scraper's repeated requests reuse one review.
// The reviewer is a table of tokens standing for the apiserver's answers
// (the real TokenReview and SubjectAccessReview calls are exercised against
// the test bed's apiserver by test/integration/api/metrics_prometheus_test.cc).

#include "kube/authn_authz.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>

namespace caphv::kube {
namespace {

using std::chrono::seconds;

// token -> user; users in `allowed` may get /metrics.
class TableReviewer final : public AccessReviewer {
 public:
  std::map<std::string, std::string> users;
  std::map<std::string, bool> allowed;
  bool authn_down = false, authz_down = false;
  int authentications = 0, authorizations = 0;
  AccessRequest last_request;
  UserInfo last_user;

  StatusOr<TokenReviewResult> Authenticate(std::string_view token) override {
    ++authentications;
    if (authn_down) return Status(StatusCode::kUnavailable, "connection refused");
    TokenReviewResult r;
    auto it = users.find(std::string(token));
    if (it == users.end()) {
      r.error = "invalid bearer token";
      return r;
    }
    r.authenticated = true;
    r.user.username = it->second;
    r.user.groups = {"system:serviceaccounts", "system:authenticated"};
    return r;
  }
  StatusOr<AuthorizationResult> Authorize(const UserInfo& user,
                                          const AccessRequest& request) override {
    ++authorizations;
    last_user = user;
    last_request = request;
    if (authz_down) return Status(StatusCode::kUnavailable, "connection refused");
    bool ok = allowed[user.username] && request.path == "/metrics" && request.verb == "get";
    return AuthorizationResult{ok, ok ? "RBAC: allowed" : ""};
  }
};

HttpRequest Get(std::string authorization, std::string method = "GET") {
  HttpRequest r;
  r.method = std::move(method);
  r.target = r.path = "/metrics";
  r.remote_address = "127.0.0.1:40000";
  if (!authorization.empty()) r.headers.emplace_back("authorization", std::move(authorization));
  return r;
}

class AccessFilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reviewer_ = std::make_shared<TableReviewer>();
    reviewer_->users = {{"prom-token", "system:serviceaccount:monitoring:prometheus"},
                        {"other-token", "system:serviceaccount:default:other"}};
    reviewer_->allowed = {{"system:serviceaccount:monitoring:prometheus", true}};
    filter_ = std::make_shared<AccessFilter>(
        reviewer_, AccessCacheOptions{.allowed_ttl = seconds(120), .denied_ttl = seconds(30)},
        clock_);
    handler_ = AccessFilter::Wrap(filter_, [this](const HttpRequest&) {
      ++served_;
      return HttpResponse{.status = 200, .body = "caphv_machine_create_total 0\n"};
    });
  }

  FakeClock clock_;
  std::shared_ptr<TableReviewer> reviewer_;
  std::shared_ptr<AccessFilter> filter_;
  HttpHandler handler_;
  int served_ = 0;
};

TEST_F(AccessFilterTest, AllowedTokenIsServed) {
  HttpResponse r = handler_(Get("Bearer prom-token"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "caphv_machine_create_total 0\n");
  EXPECT_EQ(served_, 1);
  EXPECT_EQ(reviewer_->last_request.path, "/metrics");
  EXPECT_EQ(reviewer_->last_request.verb, "get");
  EXPECT_EQ(reviewer_->last_user.username, "system:serviceaccount:monitoring:prometheus");
  EXPECT_EQ(reviewer_->last_user.groups.size(), 2u) << "the groups go to the access review";
}

TEST_F(AccessFilterTest, MissingOrMalformedTokenIs401WithoutAReview) {
  for (const char* header :
       {"", "Basic dXNlcjpwYXNz", "Bearer", "Bearer ", "Bearer a b", "Bearerprom-token"}) {
    HttpResponse r = handler_(Get(header));
    EXPECT_EQ(r.status, 401) << header;
    EXPECT_EQ(r.body, "Unauthorized\n") << header;
  }
  EXPECT_EQ(reviewer_->authentications, 0);
  EXPECT_EQ(served_, 0);
}

TEST_F(AccessFilterTest, InvalidTokenIs401AndForbiddenUserIs403) {
  HttpResponse r = handler_(Get("Bearer not-a-token"));
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(reviewer_->authorizations, 0) << "no access review for an unauthenticated token";
  r = handler_(Get("Bearer other-token"));
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body, "Authorization denied for user system:serviceaccount:default:other\n");
  EXPECT_EQ(served_, 0);
}

TEST_F(AccessFilterTest, SchemeIsCaseInsensitiveAndHeadIsGet) {
  EXPECT_EQ(handler_(Get("bearer prom-token")).status, 200);
  EXPECT_EQ(handler_(Get("BEARER  prom-token ")).status, 200);
  EXPECT_EQ(handler_(Get("Bearer prom-token", "HEAD")).status, 200);
  EXPECT_EQ(handler_(Get("Bearer prom-token", "POST")).status, 403);
  EXPECT_EQ(reviewer_->last_request.verb, "post");
}

TEST_F(AccessFilterTest, ScrapesEvery15sCostOneReviewPerTwoMinutes) {
  for (int i = 0; i < 8; ++i) {  // 0 .. 105 s
    EXPECT_EQ(handler_(Get("Bearer prom-token")).status, 200);
    clock_.Step(seconds(15));
  }
  EXPECT_EQ(reviewer_->authentications, 1);
  EXPECT_EQ(reviewer_->authorizations, 1);
  EXPECT_EQ(filter_->reviews(), 2u);
  EXPECT_EQ(handler_(Get("Bearer prom-token")).status, 200);  // 120 s: asks again
  EXPECT_EQ(reviewer_->authentications, 2);
  EXPECT_EQ(served_, 9);
}

TEST_F(AccessFilterTest, RefusalsAreCachedForLessTime) {
  EXPECT_EQ(handler_(Get("Bearer other-token")).status, 403);
  clock_.Step(seconds(15));
  EXPECT_EQ(handler_(Get("Bearer other-token")).status, 403);
  EXPECT_EQ(reviewer_->authorizations, 1);
  // The role is granted: within the denied TTL the answer changes.
  reviewer_->allowed["system:serviceaccount:default:other"] = true;
  clock_.Step(seconds(15));
  EXPECT_EQ(handler_(Get("Bearer other-token")).status, 200);
  EXPECT_EQ(reviewer_->authorizations, 2);
}

TEST_F(AccessFilterTest, ApiServerErrorsAreNotCached) {
  reviewer_->authn_down = true;
  EXPECT_EQ(handler_(Get("Bearer prom-token")).status, 401);
  reviewer_->authn_down = false;
  reviewer_->authz_down = true;
  HttpResponse r = handler_(Get("Bearer prom-token"));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "Authorization error\n");
  reviewer_->authz_down = false;
  EXPECT_EQ(handler_(Get("Bearer prom-token")).status, 200);
  EXPECT_EQ(reviewer_->authentications, 3);
  EXPECT_EQ(served_, 1);
}

TEST(BearerTokenTest, Forms) {
  EXPECT_EQ(BearerToken("Bearer abc.def-ghi"), "abc.def-ghi");
  EXPECT_EQ(BearerToken("bearer\tabc"), "abc");
  EXPECT_EQ(BearerToken("  Bearer abc  "), "abc");
  EXPECT_EQ(BearerToken("Bearer"), "");
  EXPECT_EQ(BearerToken("Token abc"), "");
  EXPECT_EQ(BearerToken("Bearer a b"), "");
  EXPECT_EQ(BearerToken(""), "");
}

}  // namespace
}  // namespace caphv::kube
