#!/usr/bin/env bash
# The release image as a container runtime sees it (ctest: release_image).
#
#   test/release/image_test.sh <version> <outdir>
#
# hack/image.sh builds the OCI archive (or reuses it: cached by the binary's digest); this
# unpacks it the way a runtime does (index.json -> manifest -> config; every blob checked
# against its digest; the layers applied in order, whiteouts included, into a root file
# system) and checks what a user of the image gets: the config (user 65532:65532, entrypoint
# /caphv-manager, the OCI labels), a root file system holding nothing but the binary, the
# libraries ldd lists for it, the loader, the CA bundle and /etc/{passwd,group}, all owned by
# root, and the entrypoint running with --version in a chroot as 65532:65532, printing the
# version (X.Y.Z of vX.Y.Z). Also the sizes (archive and unpacked root file system), each at
# most 30 MB.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -eq 2 ] || { echo "usage: $0 <version> <outdir>" >&2; exit 2; }
version=$1
outdir=$2
limit=30000000
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: building the image (buildah) and running it (chroot) need root"
  exit 77
fi
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
now_ms() { date +%s%3N; }

t0=$(now_ms)
archive=$("$root/hack/image.sh" "$version" "$outdir")
t1=$(now_ms)
echo "image: $archive ($(((t1 - t0) / 1000)).$((((t1 - t0) % 1000) / 100)) s for hack/image.sh)"

work=$(mktemp -d "${TMPDIR:-/tmp}/caphv-image-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
oci=$work/oci
rootfs=$work/rootfs
mkdir -p "$oci" "$rootfs"
tar -xf "$archive" -C "$oci"

# blob DIGEST: the path of a blob, after checking its content against the digest.
blob() {
  local path=$oci/blobs/${1%%:*}/${1#*:}
  [ -f "$path" ] || { echo "FAIL: blob $1 missing from the archive" >&2; exit 1; }
  [ "sha256:$(sha256sum "$path" | cut -d' ' -f1)" = "$1" ] ||
    { echo "FAIL: blob $1 does not match its digest" >&2; exit 1; }
  echo "$path"
}

# expect WHAT ACTUAL EXPECTED
expect() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }

[ "$(jq -r .imageLayoutVersion "$oci/oci-layout")" = 1.0.0 ] || fail "not an OCI image layout"
index=$oci/index.json
expect "manifests in index.json" "$(jq '.manifests | length' "$index")" 1
expect "manifest media type" "$(jq -r '.manifests[0].mediaType' "$index")" \
  application/vnd.oci.image.manifest.v1+json
expect "reference name" "$(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' "$index")" \
  "caphv-manager:$version"
manifest=$(blob "$(jq -r '.manifests[0].digest' "$index")")
config=$(blob "$(jq -r .config.digest "$manifest")")

# The config: what `docker inspect` shows.
expect "os/architecture" "$(jq -r '.os + "/" + .architecture' "$config")" "linux/$(dpkg --print-architecture)"
expect "User" "$(jq -r .config.User "$config")" 65532:65532
expect "Entrypoint" "$(jq -c .config.Entrypoint "$config")" '["/caphv-manager"]'
expect "Cmd" "$(jq -c '.config.Cmd // []' "$config")" '[]'
label() { jq -r --arg k "org.opencontainers.image.$1" '.config.Labels[$k] // ""' "$config"; }
expect "label version" "$(label version)" "$version"
revision=$(git -C "$root" rev-parse HEAD)
case $(label revision) in
  "$revision" | "$revision-dirty") ;;
  *) fail "label revision: got '$(label revision)', want $revision (the checkout's commit)" ;;
esac
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}
expect "label created (the commit date)" "$(label created)" "$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"
expect "created" "$(jq -r .created "$config")" "$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"
[ -n "$(label source)" ] || fail "label source is empty"

# The layers, in order, as a runtime applies them.
mapfile -t layers < <(jq -r '.layers[] | .mediaType + " " + .digest' "$manifest")
expect "layers vs diff_ids" "${#layers[@]}" "$(jq '.rootfs.diff_ids | length' "$config")"
unpacked=0
for i in "${!layers[@]}"; do
  read -r type digest <<<"${layers[$i]}"
  path=$(blob "$digest")
  case $type in
    *.tar+gzip) decompress=(gzip -dc) ;;
    *.tar) decompress=(cat) ;;
    *) fail "layer $digest: unsupported media type $type"; continue ;;
  esac
  diff_id=sha256:$("${decompress[@]}" "$path" | sha256sum | cut -d' ' -f1)
  expect "diff_id of layer $i" "$diff_id" "$(jq -r ".rootfs.diff_ids[$i]" "$config")"
  unpacked=$((unpacked + $("${decompress[@]}" "$path" | wc -c)))
  owners=$("${decompress[@]}" "$path" | tar -tv --numeric-owner | awk '$2 != "0/0"')
  [ -z "$owners" ] || fail "layer $i has files not owned by root:"$'\n'"$owners"
  # Whiteouts delete from the layers below: .wh..wh..opq empties its folder, .wh.NAME deletes NAME.
  while IFS= read -r entry; do
    entry=${entry#./}
    name=$(basename "$entry")
    dir=$rootfs/$(dirname "$entry")
    case $name in
      .wh..wh..opq) [ -d "$dir" ] && find "$dir" -mindepth 1 -maxdepth 1 -exec rm -rf {} + ;;
      .wh.*) rm -rf "${dir:?}/${name#.wh.}" ;;
    esac
  done < <("${decompress[@]}" "$path" | tar -t)
  "${decompress[@]}" "$path" | tar -x --numeric-owner --exclude='.wh.*' -C "$rootfs"
done

# Exactly the expected files.
[ -x "$rootfs/caphv-manager" ] || { echo "FAIL: no executable /caphv-manager in the image" >&2; exit 1; }
expected=$(
  printf '%s\n' /caphv-manager /etc/passwd /etc/group /etc/ssl/certs/ca-certificates.crt
  ldd "$rootfs/caphv-manager" | awk '$2 == "=>" && $3 ~ /^\// { print $3; next } $1 ~ /^\// { print $1 }'
)
actual=$(cd "$rootfs" && find . ! -type d | sed 's|^\.||')
extra=$(comm -13 <(sort -u <<<"$expected") <(sort -u <<<"$actual"))
missing=$(comm -23 <(sort -u <<<"$expected") <(sort -u <<<"$actual"))
[ -z "$extra" ] || fail "files in the image that do not belong there:"$'\n'"$extra"
[ -z "$missing" ] || fail "files missing from the image:"$'\n'"$missing"
grep -qx 'nonroot:x:65532:65532:[^:]*:[^:]*:[^:]*' "$rootfs/etc/passwd" || fail "/etc/passwd has no nonroot (65532)"
grep -qx 'nonroot:x:65532:' "$rootfs/etc/group" || fail "/etc/group has no nonroot (65532)"
grep -q 'BEGIN CERTIFICATE' "$rootfs/etc/ssl/certs/ca-certificates.crt" || fail "the CA bundle holds no certificate"

# The entrypoint, as the image's user, with nothing but the image's files.
if out=$(chroot --userspec=65532:65532 "$rootfs" /caphv-manager --version 2>&1); then
  echo "--version: $out"
  grep -qF -- "${version#v}" <<<"$out" || fail "--version does not name $version: $out"
else
  fail "/caphv-manager --version in the image failed: $out"
fi

size=$(stat -c %s "$archive")
echo "size: archive $((size / 1000)) kB, unpacked layers $((unpacked / 1000)) kB (limit $((limit / 1000)) kB each)"
[ "$size" -le "$limit" ] || fail "the archive is $size bytes, over $limit"
[ "$unpacked" -le "$limit" ] || fail "the unpacked layers are $unpacked bytes, over $limit"
t2=$(now_ms)
echo "checks: $(((t2 - t1) / 1000)).$((((t2 - t1) % 1000) / 100)) s; total $(((t2 - t0) / 1000)).$((((t2 - t0) % 1000) / 100)) s"
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed" >&2; exit 1; }
echo "PASS"
