# shellcheck shell=bash
# Helpers for hack/testbed: messages, the bed's env file, free ports, process
# start/stop by pid, certificates and readiness polling. Sourced, not run.
# Expects $DIR (absolute path of the bed) to be set by the caller.

tb_log() { printf 'testbed: %s\n' "$*" >&2; }
tb_die() { printf 'testbed: error: %s\n' "$*" >&2; exit 1; }

# Milliseconds since the epoch (for the timings printed by `up`).
tb_now_ms() { date +%s%3N; }

# ---------------------------------------------------------------------------
# DIR/env: shell `KEY=value` lines; sourced by `down`, `restart`, tests.

tb_env_set() {
  local key=$1 value=$2 file="$DIR/env" tmp
  tmp="$file.tmp.$$"
  if [ -f "$file" ]; then grep -v "^$key=" "$file" >"$tmp" || true; else : >"$tmp"; fi
  printf '%s=%q\n' "$key" "$value" >>"$tmp"
  mv "$tmp" "$file"
}

tb_env_load() {
  [ -f "$DIR/env" ] || tb_die "no test bed in $DIR (missing $DIR/env)"
  # shellcheck disable=SC1091
  . "$DIR/env"
}

# ---------------------------------------------------------------------------
# Free loopback ports. Picks N distinct random ports in [20000, 32000) (below
# the kernel's ephemeral range, so outgoing connections never take them) that
# can be bound on 127.0.0.1 right now; prints them space-separated.
#
# A pick is only bound later by the process it is for (a bed's simulator,
# tens of seconds later), so a second bed coming up meanwhile on the same
# machine could pick it too. Each pick is therefore booked in
# $TB_PORTS_DIR/<port> (holding the bed's directory) under a lock, and no
# bed picks a port booked for a directory that still exists. `down` and a
# fresh `up` cancel the bed's own bookings (tb_release_ports).

TB_PORTS_DIR=${CAPHV_TESTBED_PORTS_DIR:-${TMPDIR:-/tmp}/caphv-testbed-ports}

tb_free_ports() {
  python3 - "$1" "$DIR" "$TB_PORTS_DIR" <<'EOF'
import fcntl, os, random, socket, sys
n, owner, book = int(sys.argv[1]), sys.argv[2], sys.argv[3]
os.makedirs(book, exist_ok=True)

def booked(p):
    try:
        with open(os.path.join(book, str(p))) as f:
            holder = f.read()
    except FileNotFoundError:
        return False
    return holder != "" and os.path.isdir(holder)

with open(os.path.join(book, ".lock"), "a") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    for name in os.listdir(book):  # bookings of beds whose directory is gone
        if name.isdigit() and not booked(name):
            os.remove(os.path.join(book, name))
    held, ports = [], []
    while len(ports) < n:
        p = random.randrange(20000, 32000)
        if p in ports or booked(p):
            continue
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            s.close()
            continue
        held.append(s)
        ports.append(p)
    for p in ports:
        with open(os.path.join(book, str(p)), "w") as f:
            f.write(owner)
print(" ".join(str(p) for p in ports))
EOF
}

tb_release_ports() {  # cancels every booking of $DIR
  python3 - "$DIR" "$TB_PORTS_DIR" <<'EOF'
import fcntl, os, sys
owner, book = sys.argv[1], sys.argv[2]
if os.path.isdir(book):
    with open(os.path.join(book, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in os.listdir(book):
            if not name.isdigit():
                continue
            path = os.path.join(book, name)
            try:
                with open(path) as f:
                    if f.read() == owner:
                        os.remove(path)
            except FileNotFoundError:
                pass
EOF
}

# ---------------------------------------------------------------------------
# Processes. Every process the bed starts has its pid in DIR/run/<name>.pid
# and its output in DIR/logs/<name>.log. A pid is only signalled while its
# command line still mentions $DIR, so a recycled pid is never hit.

tb_start() {  # tb_start NAME CMD ARGS...
  local name=$1
  shift
  mkdir -p "$DIR/run" "$DIR/logs"
  printf '\n=== %s: %s\n' "$(date -u +%FT%TZ)" "$*" >>"$DIR/logs/$name.log"
  "$@" </dev/null >>"$DIR/logs/$name.log" 2>&1 &
  echo "$!" >"$DIR/run/$name.pid"
  disown "$!"
}

tb_pid() {  # prints the pid of NAME if it is alive and ours
  local file="$DIR/run/$1.pid" pid
  [ -f "$file" ] || return 1
  pid=$(<"$file")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$DIR" || return 1
  echo "$pid"
}

tb_alive() { tb_pid "$1" >/dev/null; }

# tb_stop NAME... : TERM, then KILL after $TB_STOP_GRACE seconds; waits until
# every process is gone.
tb_stop() {
  local name pid pids=() deadline
  for name in "$@"; do
    if pid=$(tb_pid "$name"); then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  deadline=$(($(date +%s) + ${TB_STOP_GRACE:-15}))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do
      # A zombie child of this shell counts as gone.
      grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null && break
      sleep 0.2
    done
  done
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
      tb_log "pid $pid did not stop after TERM; sending KILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for name in "$@"; do rm -f "$DIR/run/$name.pid"; done
}

# All process names with a pid file, most dependent first (stop order).
tb_all_names() {
  local f names=()
  [ -d "$DIR/run" ] || return 0
  for f in "$DIR"/run/*.pid; do
    [ -e "$f" ] || continue
    f=${f##*/}
    names+=("${f%.pid}")
  done
  # caphv-sim and caphv-go, rke2-*, capi, controller managers, apiservers, etcd.
  printf '%s\n' "${names[@]}" | awk '
    /^caphv-/ {print 0, $0; next} /^rke2-/ {print 0, $0; next} /^capi/ {print 1, $0; next}
    /^controller-manager/ {print 2, $0; next} /^apiserver/ {print 3, $0; next}
    {print 4, $0}' | sort -n | cut -d' ' -f2-
}

# Stops every process of the bed: clients first, etcd last (etcd waits for
# its clients' streams when stopping gracefully).
tb_stop_all() {
  local names=() name
  while read -r name; do
    [ -n "$name" ] && [ "$name" != etcd ] && names+=("$name")
  done < <(tb_all_names)
  [ "${#names[@]}" -gt 0 ] && tb_stop "${names[@]}"
  tb_stop etcd
}

# Sum of VmRSS (KiB) of the bed's live processes.
tb_rss_kib() {
  local name pid total=0 kib
  while read -r name; do
    [ -n "$name" ] || continue
    pid=$(tb_pid "$name") || continue
    kib=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    total=$((total + ${kib:-0}))
  done < <(tb_all_names)
  echo "$total"
}

# ---------------------------------------------------------------------------
# Certificates (OpenSSL 3): one CA per bed and a serving certificate for
# localhost/127.0.0.1 that every apiserver and webhook server of the bed uses.

tb_make_pki() {
  local pki="$DIR/pki"
  mkdir -p "$pki"
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=caphv-testbed-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
      -keyout serving.key -out serving.csr 2>/dev/null
    printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" >serving.ext
    openssl x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 8)" \
      -days 3650 -extfile serving.ext -out serving.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    rm -f serving.csr serving.ext
    chmod 600 ./*.key
  ) || tb_die "creating certificates in $pki failed"
}

# tb_write_kubeconfig FILE NAME SERVER TOKEN
tb_write_kubeconfig() {
  local ca
  ca=$(base64 -w0 <"$DIR/pki/ca.crt")
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $2
  cluster:
    server: $3
    certificate-authority-data: $ca
users:
- name: $2-admin
  user:
    token: $4
contexts:
- name: $2
  context:
    cluster: $2
    user: $2-admin
current-context: $2
EOF
  chmod 600 "$1"
}

# ---------------------------------------------------------------------------
# Polling.

# tb_https_ok URL [TOKEN]: true when URL answers 2xx over the bed's CA.
tb_https_ok() {
  local auth=()
  [ -n "${2:-}" ] && auth=(-H "Authorization: Bearer $2")
  curl -fsS -o /dev/null --max-time 3 --cacert "$DIR/pki/ca.crt" "${auth[@]}" "$1" 2>/dev/null
}

tb_http_ok() { curl -fsS -o /dev/null --max-time 3 "$1" 2>/dev/null; }

# tb_wait_until NAME WHAT CHECK...: runs CHECK every TB_WAIT_STEP seconds
# (0.5) until it succeeds; dies with NAME's log when process NAME exits
# ("WHAT exited") or after $TIMEOUT seconds ("WHAT not ready", with what the
# last CHECK printed). The one wait loop of the bed.
tb_wait_until() {
  local name=$1 what=$2 deadline=$(($(date +%s) + TIMEOUT)) out=""
  shift 2
  until out=$("$@" 2>&1); do
    tb_alive "$name" || tb_fail_with_log "$name" "$what exited"
    [ "$(date +%s)" -lt "$deadline" ] ||
      tb_fail_with_log "$name" "$what not ready after ${TIMEOUT}s${out:+ (last: $out)}"
    sleep "${TB_WAIT_STEP:-0.5}"
  done
}

# tb_fail_with_log NAME MESSAGE: dies naming (and quoting the end of) the log.
tb_fail_with_log() {
  local log="$DIR/logs/$1.log"
  if [ -f "$log" ]; then
    tb_log "last lines of $log:"
    tail -n 15 "$log" | sed 's/^/    /' >&2
  fi
  tb_die "$2 (log: $log)"
}
