// Unit tests of harvester/identity_expiry: Rancher token objects, the three
// states of an identity's credentials and the texts operators read.

#include "harvester/identity_expiry.h"

#include <gtest/gtest.h>

#include "api/conditions.h"

namespace caphv::harvester {
namespace {

using Clock = std::chrono::system_clock;
using kube::Object;
using std::chrono::hours;

Clock::time_point At(const std::string& text) { return *api::ParseTime(text); }

// A token as Harvester's embedded Rancher stores it (cluster-scoped, fields
// at the top level).
Object Token(Object fields) {
  Object t = {{"apiVersion", "management.cattle.io/v3"},
              {"kind", "Token"},
              {"metadata",
               {{"name", "kubeconfig-user-abc12"}, {"creationTimestamp", "2026-11-01T08:00:00Z"}}},
              {"userId", "user-abc12"},
              {"authProvider", "local"}};
  t.update(fields);
  return t;
}

TEST(IdentityExpiryTest, ARancherTokenExpiresAtExpiresAtElseCreationPlusTtl) {
  EXPECT_EQ(RancherTokenExpiry(Token({{"expiresAt", "2026-12-01T08:00:00Z"}, {"ttl", 1}})),
            At("2026-12-01T08:00:00Z"));
  // 30 days in milliseconds, Rancher 2.8's kubeconfig default.
  EXPECT_EQ(RancherTokenExpiry(Token({{"ttl", int64_t{30} * 24 * 3600 * 1000}})),
            At("2026-12-01T08:00:00Z"));
  EXPECT_EQ(RancherTokenExpiry(Token({{"ttl", 0}, {"expiresAt", ""}})), std::nullopt);
  EXPECT_EQ(RancherTokenExpiry(Token(Object::object())), std::nullopt);
  EXPECT_EQ(RancherTokenExpiry(Token({{"ttl", "30d"}})), std::nullopt);
  Object no_created = Token({{"ttl", 1000}});
  no_created["metadata"].erase("creationTimestamp");
  EXPECT_EQ(RancherTokenExpiry(no_created), std::nullopt);
  EXPECT_EQ(RancherTokenExpiry(Object::array()), std::nullopt);
}

TEST(IdentityExpiryTest, FourteenDaysBeforeTheExpiryItIsExpiringSoon) {
  const kube::CredentialExpiry e{At("2026-12-15T00:00:00Z"), "token"};
  EXPECT_EQ(StateOf(e, At("2026-11-30T23:59:59Z")), ExpiryState::kValid);
  EXPECT_EQ(StateOf(e, At("2026-12-01T00:00:00Z")), ExpiryState::kExpiringSoon);
  EXPECT_EQ(StateOf(e, At("2026-12-14T23:59:59Z")), ExpiryState::kExpiringSoon);
  EXPECT_EQ(StateOf(e, At("2026-12-15T00:00:00Z")), ExpiryState::kExpired);
}

TEST(IdentityExpiryTest, TheDescriptionSaysWhatExpiresWhen) {
  const kube::CredentialExpiry e{At("2026-12-15T00:00:00Z"), "Rancher token kubeconfig-user-x"};
  EXPECT_EQ(DescribeExpiry(e, At("2026-12-12T00:00:00Z")),
            "the Rancher token kubeconfig-user-x of the identity kubeconfig expires at "
            "2026-12-15T00:00:00Z (in 3 days)");
  EXPECT_EQ(DescribeExpiry(e, At("2026-12-14T19:00:00Z")),
            "the Rancher token kubeconfig-user-x of the identity kubeconfig expires at "
            "2026-12-15T00:00:00Z (in 5 hours)");
  EXPECT_EQ(DescribeExpiry(e, At("2026-12-16T00:00:00Z")),
            "the Rancher token kubeconfig-user-x of the identity kubeconfig expired at "
            "2026-12-15T00:00:00Z (1 day ago)");
  // The condition's text does not change as time passes.
  EXPECT_EQ(DescribeExpiry(e, At("2026-12-12T00:00:00Z"), false),
            DescribeExpiry(e, At("2026-12-13T05:00:00Z"), false));
}

}  // namespace
}  // namespace caphv::harvester
