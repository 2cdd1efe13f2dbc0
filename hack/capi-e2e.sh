#!/usr/bin/env bash
# Runs Cluster API's own end-to-end specs (test/capi-e2e/: quick start with and without
# ClusterClass, MachineDeployment scale, rollout (v1.10 only) and remediation, from
# sigs.k8s.io/cluster-api/test: v1.10.10 on a 1.10 bed, v1.13.7 on a 1.14 bed) against a running test bed
# started with --with-capi --with-harvester --with-rke2, with CAPHV as the infrastructure
# provider. Builds the suite once (hack/build-testbins.sh capi-e2e, cached by digest; nothing
# to do when warm), then runs it; logs, resource dumps and the clusterctl repository go to
# $CAPHV_TESTBED/logs/capi-e2e/ (caphv-manager.log among them).
#
#   CAPHV_TESTBED=DIR CAPHV_BUILD_DIR=build [CAPHV_SOURCE_DIR=.] hack/capi-e2e.sh [suite flags]
#
# Suite flags go to the test binary, e.g. -ginkgo.focus 'quick-start' or -e2e.skip-cleanup.
# The ctest test capi_e2e (labels nosan;integration) runs this against the ctest bed. Exit 77
# (skipped) when the bed runs without the RKE2 providers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
: "${CAPHV_TESTBED:?set CAPHV_TESTBED to the test bed directory}"
: "${CAPHV_BUILD_DIR:?set CAPHV_BUILD_DIR to the build tree with caphv-manager}"
export CAPHV_SOURCE_DIR=${CAPHV_SOURCE_DIR:-$root}
cache=${CAPHV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/caphv}
# shellcheck source=hack/lib/toolchain.sh
. "$root/hack/lib/toolchain.sh"
caphv_use_kubectl

if ! grep -qx 'WITH_RKE2=1' "$CAPHV_TESTBED/env" 2>/dev/null; then
  echo "capi-e2e: skipped: the bed $CAPHV_TESTBED runs without the RKE2 providers (up --with-rke2)"
  exit 77
fi

# The suite of the bed's generation: framework v1.10.10 (test/capi-e2e) on 1.10, v1.13.7
# (test/capi-e2e/v1beta2, contract v1beta2) on 1.14.
generation=$(sed -n 's/^CAPI_GENERATION=//p' "$CAPHV_TESTBED/env" 2>/dev/null)
case ${generation:-1.10} in
  1.10) family=capi-e2e suite=$cache/bin/current/capi-e2e.test module=test/capi-e2e ;;
  1.14) family=capi-e2e-v1beta2 suite=$cache/bin/capi-1.14/capi-e2e.test module=test/capi-e2e/v1beta2 ;;
  *) echo "capi-e2e: the bed $CAPHV_TESTBED runs Cluster API v$generation, which has no suite here" >&2; exit 1 ;;
esac
"$root/hack/build-testbins.sh" "$family"
[ -x "$suite" ] || { echo "capi-e2e: $suite not built" >&2; exit 1; }

# clusterctl reads no user configuration and checks for no newer release.
export CLUSTERCTL_DISABLE_VERSIONCHECK=true
# The framework writes a kubeconfig per cluster into the temporary folder and
# leaves it: they go in the bed's folder, emptied on each run, not in /tmp.
export TMPDIR=$CAPHV_TESTBED/capi-e2e-tmp
rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"
cd "$root/$module"
exec "$suite" -test.v -test.timeout 60m -ginkgo.v -ginkgo.no-color \
  -caphv.testbed "$CAPHV_TESTBED" -caphv.source "$CAPHV_SOURCE_DIR" -caphv.build "$CAPHV_BUILD_DIR" "$@"
