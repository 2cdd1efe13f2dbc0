// Installing CAPHV over the Go provider v0.2.9's install with `kubectl
// apply`, as the operations guide says users do:
//
//   kubectl apply -f infrastructure-components.yaml          (the Go provider)
//   kubectl kustomize config/default | kubectl apply -f -    (CAPHV, over it)
//
// against the test bed's management apiserver, in the namespace both installs
// use (caphv-system), with cert-manager's real CRDs (the installs carry an
// Issuer and a Certificate; the bed runs no cert-manager controller). Then:
// the apply succeeds, the Deployment keeps the Go provider's selector and is
// updated in place, every object of the Go install is taken over, no
// webhook (admission or CRD conversion) points at a Service or path the
// manager does not serve, the Deployment's flags parse with caphv-manager's
// own option parser and agree with its ports, Services and certificate, and
// the operations guide's troubleshooting and migration commands find every
// object they name.
//
// Twice: over a Go install made with `kubectl apply` (three-way merge), and
// over one without kubectl's last-applied annotation (clusterctl, an
// operator or `kubectl create` leave none; `kubectl apply` then merges).
//
// Inputs: the Go provider's source archive ($CAPHV_GO_PROVIDER_SOURCE, else
// ../shared/third_party next to the checkout; skipped, saying so, when
// absent) and cert-manager's CRDs from the cache hack/build-testbins.sh fills
// ($CAPHV_CERT_MANAGER_CRDS to use another folder). Everything the test
// creates is removed at the end; CAPHV's CRDs, when the bed had them before,
// are put back as config/crd/bases has them.
//
// The fixture is GoInstallTest (go_install_support.h), its checks in
// go_install_checks.cc.

#include <gtest/gtest.h>

#include <string>

#include "go_install_support.h"

namespace caphv::testing::go_install {
namespace {

TEST_F(GoInstallTest, KubectlApplyOverAGoInstallTakesItOver) {
  std::string out;
  ASSERT_EQ(Kubectl("apply -f " + go_file_.string(), &out), 0) << out;
  const std::string uid = GoDeploymentUid();
  ApplyCaphv();
  CheckInstall(uid);
  RunTroubleshootingCommands();
  RunMigrationCommands();
}

TEST_F(GoInstallTest, KubectlApplyOverAGoInstallWithoutLastAppliedAnnotation) {
  CreateGoInstallWithoutAnnotation();
  if (HasFatalFailure()) return;
  const std::string uid = GoDeploymentUid();
  ApplyCaphv();
  CheckInstall(uid);
}

}  // namespace
}  // namespace caphv::testing::go_install
