#!/usr/bin/env bash
# The caphv-manager container image: hack/image.sh <version> <outdir>
#
# Builds caphv-manager in Release mode ($CAPHV_RELEASE_BUILD_DIR, default build-release/,
# reporting <version> in --version, its start-up log and user agent; -O2, the optimization of
# the tested RelWithDebInfo build, as GCC 12 at -O3 reports false -Wrestrict and
# -Wformat-truncation errors), strips it, and makes an OCI image with buildah holding only:
#   /caphv-manager                         the binary (its entrypoint)
#   the shared libraries `ldd` lists for it, at the paths ldd prints, and the dynamic loader
#   /etc/ssl/certs/ca-certificates.crt     the host's CA bundle
#   /etc/passwd, /etc/group                root and nonroot (65532)
# run as USER 65532:65532, with the OCI labels version, revision (the commit; "-dirty" when
# tracked files differ from it), created (the commit date, or $SOURCE_DATE_EPOCH, also every
# file's time: the same tree gives the same image) and source ($CAPHV_SOURCE_URL, else the git
# remote `origin`, else "unknown"). Writes <outdir>/caphv-manager-<version>.oci.tar (an OCI
# archive: `skopeo copy oci-archive:...`, `podman load -i ...`; byte for byte the same for the
# same commit and libraries) and prints its path.
#
# <outdir> gets the archive only: the logs and the cache key are in <build dir>/image/. Cached:
# the archive is rebuilt only when its key changes (the stripped binary's digest, the libraries'
# digests, version, labels and this script).
# Needs root (buildah, vfs storage driver, in a temporary storage root).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
self=$root/hack/image.sh
[ $# -eq 2 ] || { echo "usage: hack/image.sh <version> <outdir>" >&2; exit 2; }
version=$1
outdir=$2
[[ $version =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]] || { echo "image: bad version '$version'" >&2; exit 2; }
command -v buildah >/dev/null || { echo "image: buildah is required (hack/setup.sh installs it)" >&2; exit 1; }
build_dir=${CAPHV_RELEASE_BUILD_DIR:-$root/build-release}
cache=${CAPHV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/caphv}
export CCACHE_DIR=${CCACHE_DIR:-$cache/ccache}
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
archive=$outdir/caphv-manager-$version.oci.tar
logs=$build_dir/image
mkdir -p "$logs"
keyfile=$logs/$(sha256sum <<<"$archive" | cut -c1-16).key  # per archive path

# 1. The Release binary (incremental: a no-op when nothing changed).
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" "-DCAPHV_VERSION=$version" \
  >"$logs/cmake.log" 2>&1 || { cat "$logs/cmake.log" >&2; exit 1; }
cmake --build "$build_dir" -j "${JOBS:-$(nproc)}" --target caphv-manager >"$logs/build.log" 2>&1 ||
  { tail -n 40 "$logs/build.log" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/caphv-image.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/rootfs
mkdir -p "$stage"
objcopy --strip-all "$build_dir/cmd/caphv-manager/caphv-manager" "$stage/caphv-manager"
chmod 0755 "$stage/caphv-manager"

# 2. The libraries: "name => /path (addr)" and the loader's "/path (addr)"; vdso has no file.
mapfile -t libs < <(ldd "$stage/caphv-manager" | awk '
  /not found/ { print "MISSING " $1; next }
  $2 == "=>" && $3 ~ /^\// { print $3; next }
  $1 ~ /^\// { print $1 }')
for lib in "${libs[@]}"; do
  case $lib in MISSING*) echo "image: caphv-manager needs ${lib#MISSING } (not found)" >&2; exit 1 ;; esac
  mkdir -p "$stage$(dirname "$lib")"
  cp -L --preserve=mode "$lib" "$stage$lib"
done
mkdir -p "$stage/etc/ssl/certs"
cp -L /etc/ssl/certs/ca-certificates.crt "$stage/etc/ssl/certs/ca-certificates.crt"
printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
  'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin' >"$stage/etc/passwd"
printf '%s\n' 'root:x:0:' 'nonroot:x:65532:' >"$stage/etc/group"
chmod 0644 "$stage/etc/passwd" "$stage/etc/group" "$stage/etc/ssl/certs/ca-certificates.crt"

# 3. Labels; the key of the cached archive.
revision=$(git -C "$root" rev-parse HEAD)
git -C "$root" diff --quiet HEAD -- 2>/dev/null || revision=$revision-dirty
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
source_url=${CAPHV_SOURCE_URL:-$(git -C "$root" remote get-url origin 2>/dev/null || echo unknown)}
key=$( (
  cd "$stage" && find . -type f | LC_ALL=C sort | xargs sha256sum
  echo "$version $revision $created $source_url"
  sha256sum <"$self"
) | sha256sum | cut -c1-64)
if [ -f "$archive" ] && [ "$(cat "$keyfile" 2>/dev/null)" = "$key" ]; then
  echo "$archive"
  exit 0
fi

# 4. The image, FROM scratch, in a throw-away vfs storage.
case $(uname -m) in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
find "$stage" -exec touch -h -d "@$epoch" {} +
b() { buildah --root "$tmp/storage" --runroot "$tmp/run" --storage-driver vfs "$@"; }
{
  ctr=$(b from scratch)
  b copy "$ctr" "$stage" /
  b config --os linux --arch "$arch" \
    --user 65532:65532 --entrypoint '["/caphv-manager"]' --workingdir / \
    --label "org.opencontainers.image.title=caphv-manager" \
    --label "org.opencontainers.image.description=CAPHV, the Cluster API infrastructure provider for Harvester" \
    --label "org.opencontainers.image.version=$version" \
    --label "org.opencontainers.image.revision=$revision" \
    --label "org.opencontainers.image.created=$created" \
    --label "org.opencontainers.image.source=$source_url" "$ctr"
  b commit --format oci --timestamp "$epoch" --identity-label=false --omit-history --rm \
    "$ctr" "localhost/caphv-manager:$version"
  b push "localhost/caphv-manager:$version" "oci:$tmp/layout:caphv-manager:$version"
} >"$logs/buildah.log" 2>&1 || { tail -n 30 "$logs/buildah.log" >&2; exit 1; }
# The OCI archive: the layout in a tar that is the same for the same image (times, order, owners).
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=posix \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  -C "$tmp/layout" -cf "$archive.tmp" oci-layout index.json blobs
mv "$archive.tmp" "$archive"
echo "$key" >"$keyfile"
echo "$archive"
