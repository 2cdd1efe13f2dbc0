#!/usr/bin/env bash
# Fails on an #include that goes up the layers (docs/architecture.md, "Layers"),
# printing one line per offending include:
#
#   src/api/codec.h:12: src/api may not include src/controllers (controllers/setup.h)
#
# Each folder may include only itself and the folders below it:
#
#   src/kube        kube
#   src/api         kube, api
#   src/harvester   kube, api, harvester
#   src/webhooks    kube, api, harvester, webhooks
#   src/workload    kube, api, workload
#   src/controllers kube, api, harvester, webhooks, workload, controllers
#     (the kit both reconcilers share: the loop, scopes, connections, writes)
#   src/controllers/machine, src/controllers/cluster
#                   what src/controllers may include, and their own folder:
#                   never each other
#   src/controllers/setup.*  every controllers folder (it wires them)
#   src/generate    kube, api, harvester, generate
#   src/backup      kube, api, harvester, backup
#   cmd             everything but test/
#
# and nothing under src/ includes sim/ or test/ (test tooling on top).
#
# An include is resolved as the compiler would find it: next to the including
# file, then under src/, the repository root and test/; a path that resolves
# nowhere is judged by its first segment (kube/, api/, ...). System headers
# are ignored. Checks tracked and untracked (not ignored) files.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# layer_of PATH (relative to the root): src/<layer>, cmd, sim, test or "".
layer_of() {
  case "$1" in
    src/controllers/machine/* | src/controllers/cluster/*) dirname "$1" ;;
    src/controllers/setup.*) echo src/controllers/setup ;;
    src/*/*) local rest=${1#src/}; echo "src/${rest%%/*}" ;;
    cmd/*) echo cmd ;;
    sim/*) echo sim ;;
    test/*) echo test ;;
    *) echo "" ;;
  esac
}

# allowed FROM TO: whether layer FROM may include layer TO.
allowed() {
  local from=$1 to=$2
  [ "$from" = "$to" ] && return 0
  case "$from" in
    src/kube) return 1 ;;
    src/api) [[ $to == src/kube ]] ;;
    src/harvester) [[ $to =~ ^src/(kube|api)$ ]] ;;
    src/webhooks) [[ $to =~ ^src/(kube|api|harvester)$ ]] ;;
    src/workload) [[ $to =~ ^src/(kube|api)$ ]] ;;
    src/controllers) [[ $to =~ ^src/(kube|api|harvester|webhooks|workload)$ ]] ;;
    src/controllers/machine | src/controllers/cluster)
      [[ $to =~ ^src/(kube|api|harvester|webhooks|workload|controllers)$ ]] ;;
    src/controllers/setup) [[ $to =~ ^src/(kube|api|harvester|webhooks|workload|controllers)(/|$) ]] ;;
    src/generate) [[ $to =~ ^src/(kube|api|harvester)$ ]] ;;
    src/backup) [[ $to =~ ^src/(kube|api|harvester)$ ]] ;;
    src/*) [[ $to == src/* ]] ;;  # a new folder: at least never sim/ or test/
    cmd) [[ $to != test ]] ;;
    *) return 0 ;;
  esac
}

# resolve FILE INCLUDE: the root-relative path the include names, or "".
resolve() {
  local file=$1 inc=$2 dir candidate
  dir=$(dirname "$file")
  for candidate in "$dir/$inc" "src/$inc" "$inc" "test/$inc"; do
    if [ -f "$candidate" ]; then
      candidate=$(realpath -m --relative-to="$ROOT" "$candidate")
      echo "$candidate"
      return
    fi
  done
  case "$inc" in
    kube/* | api/* | harvester/* | webhooks/* | workload/* | controllers/*) echo "src/$inc" ;;
    sim/* | test/*) echo "$inc" ;;
    support/* | helpers/*) echo "test/$inc" ;;
  esac
}

status=0
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- \
  'src/*.h' 'src/*.cc' 'cmd/*.h' 'cmd/*.cc' | sort -u)
for file in "${files[@]}"; do
  [ -f "$file" ] || continue
  from=$(layer_of "$file")
  while IFS=: read -r line inc; do
    target=$(resolve "$file" "$inc")
    [ -n "$target" ] || continue
    to=$(layer_of "$target")
    [ -n "$to" ] || continue
    if ! allowed "$from" "$to"; then
      echo "$file:$line: $from may not include $to ($inc)"
      status=1
    fi
  done < <(awk 'match($0, /^[ \t]*#[ \t]*include[ \t]*[<"][^>"]+[>"]/) {
      s = substr($0, RSTART, RLENGTH); sub(/^[^<"]*[<"]/, "", s); sub(/[>"]$/, "", s)
      print NR ":" s
    }' "$file")
done
if [ "$status" -ne 0 ]; then
  echo "layers: an include goes up the layers; see docs/architecture.md (Layers)" >&2
fi
exit "$status"
