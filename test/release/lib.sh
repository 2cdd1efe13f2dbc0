# Shared by the release tests (sourced): tools, the release under test and
# check helpers. Each failed check prints what a user would see and makes the
# test fail at the end (so one run reports every failure).
set -euo pipefail
ROOT=${CAPHV_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
CACHE=${CAPHV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/caphv}
KUBECTL=${KUBECTL:-$CACHE/bin/current/kubectl}
HELM=${HELM:-$CACHE/bin/current/helm}
# clusterctl of Cluster API v1.14 (v1.10's takes only v1beta1-contract providers; the release's
# series is v1beta2), v1.10's when v1.14 is not built.
if [ -z "${CLUSTERCTL:-}" ]; then
  CLUSTERCTL=$CACHE/bin/capi-1.14/clusterctl
  [ -x "$CLUSTERCTL" ] || CLUSTERCTL=$CACHE/bin/current/clusterctl
fi
PROMTOOL=${PROMTOOL:-$(command -v promtool || echo /usr/bin/promtool)}
# The release under test: made by the ctest fixture release_build (hack/release.sh
# with OUT_DIR=$CAPHV_RELEASE_DIR).
VERSION=${VERSION:-v$(sed -n 's/^project(caphv .*VERSION \([0-9][0-9.]*\)).*/\1/p' "$ROOT/CMakeLists.txt")}
REL=${CAPHV_RELEASE_DIR:?set CAPHV_RELEASE_DIR (the OUT_DIR of hack/release.sh)}/$VERSION
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
# check DESCRIPTION COMMAND...: the command succeeds.
check() {
  local what=$1 out
  shift
  if out=$("$@" 2>&1); then pass "$what"; else fail "$what"; printf '%s\n' "$out" | tail -n 20 >&2; fi
}
finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed" >&2; exit 1; fi
  echo "all checks passed"
}
for tool in "$KUBECTL" "$HELM" "$CLUSTERCTL"; do
  [ -x "$tool" ] || { echo "$tool not found: run hack/build-testbins.sh (make setup does)" >&2; exit 1; }
done
[ -f "$REL/infrastructure-components.yaml" ] || { echo "no release in $REL (the fixture release_build makes it)" >&2; exit 1; }
