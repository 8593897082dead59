#!/usr/bin/env bash
# The request core against libcurl used directly (benchmarks/curl-floor.c), on loopback, in one run:
#   1. keep-alive GET requests per second, one at a time and 16 at once (goal: ratio >= 0.9), and CPU per
#      request (goal: ratio <= 1.3); against the bare floor, and against the floor sending the same request
#      bytes (pinpath's default User-Agent and Accept-Language lines);
#   2. full-handshake HTTPS requests: pinpath with a pin check against curl without one, and the CPU per
#      request against OpenSSL used directly (benchmarks/openssl-floor.c: one SSL_CTX and trust store for
#      every connection; goal: ratio <= 1.1), and against OpenSSL with a new SSL_CTX per connection, as
#      libcurl 7.88 makes one;
#   3. the per-request cost of the reachability gate in steady state (a numeric host's verdict, kept once the
#      kernel has been quiet for a second; until then, each request costs one kernel route look-up);
#   4. resident memory with 1,000 requests in flight;
#   5. instructions per request (callgrind, when valgrind is installed) for 1 and 2, which do not depend on
#      the machine's load: the figures to compare between builds, each split by where they run: pinpath's
#      own code (the pinpath-bench binary, its static Swift runtime included), libcurl, OpenSSL (libssl and
#      libcrypto), libc, the rest.
#   6. the Swift peers (PEERS=1, the default): AsyncHTTPClient and URLSession (FoundationNetworking), built from
#      benchmarks/swift-peers (a package of its own, not pinpath's), on the same nginx in the same rounds: the
#      keep-alive rows (1 at a time, 16 at once, from the pool as pinpath's) and the full-handshake row. AHC trusts
#      the bench root through its TLSConfiguration; URLSession on Linux can trust only libcurl's default CA file
#      (the system store), so its handshake rows run in a private mount namespace (root) where that file is the
#      system bundle with the bench root appended (what a user would do: its cost includes reading the bundle per
#      connection, as Debian's libcurl does), and where it holds the bench root alone (the least it can cost).
# 1-3 run ROUNDS times, every program once per round; each row is the median of the rounds, and its ratio
# the median of the rounds' ratios.
# Servers: nginx (Debian's package) for 1-3, a Python asyncio server that answers after 2 s for 4.
# It measures and prints; it asserts nothing.
#
#   swift build -c release --product pinpath-bench --static-swift-stdlib
#   BENCH=$PWD/.build/release/pinpath-bench benchmarks/request-core.sh
#
# Environment: COUNT keep-alive requests per run (default 5000; 16 at once make 4 × COUNT), HANDSHAKES
# full-handshake requests per run (default 500), ROUNDS (default 3), CALLGRIND=0 to skip 5, PEERS=0 to skip 6.
# tls:// checks (when pinpath-bench has its `handshake` mode, issue 30): a verified, pinned handshake through
# Session.send and nothing after it, against openssl-floor's handshake-only with one SSL_CTX; CPU and instructions.
# Full-handshake rows: pinpath pinned, and pinned with the reachability gate (the agent's probe options), against
# curl-floor with libcurl's CA cache (`cacache`), which pinpath's shared trust store matches.
# ENVS (issue 30's allocator experiment): more runs of pinpath-bench under other environments, in each round right
# after the plain ones: whitespace-separated `label:VAR=value[,VAR=value…]` (benchmarks/lib/environments.sh), e.g.
# ENVS="mimalloc:LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"; only pinpath-bench gets them. They run the
# full-handshake rows, the tls:// check and keep-alive 1 at a time, each reported against the same floors and
# against the plain environment.
set -euo pipefail
BENCH=${BENCH:?set BENCH to the pinpath-bench binary (see the header)}
COUNT=${COUNT:-5000}
HANDSHAKES=${HANDSHAKES:-500}
ROUNDS=${ROUNDS:-3}
CALLGRIND=${CALLGRIND:-1}
PEERS=${PEERS:-1}
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "request-core.sh: $*" >&2; exit 64; }
source "$here/lib/environments.sh"
work=$(mktemp -d /tmp/pinpath-request-bench.XXXXXX)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
command -v nginx >/dev/null || { echo "request-core.sh: needs nginx (apt-get install nginx-light)" >&2; exit 69; }

cc -O2 -o "$work/curl-floor" "$here/curl-floor.c" $(pkg-config --cflags --libs libcurl)
cc -O2 -o "$work/openssl-floor" "$here/openssl-floor.c" $(pkg-config --cflags --libs openssl)
if [[ $PEERS == 1 ]]; then
  # Its own .build under benchmarks/swift-peers; the first build takes several minutes (SwiftNIO, NIOSSL).
  echo "building the Swift peers (benchmarks/swift-peers; PEERS=0 skips them)…" >&2
  swift build -c release --static-swift-stdlib --package-path "$here/swift-peers" >&2 \
    || { echo "request-core.sh: the Swift peers did not build (PEERS=0 skips them)" >&2; exit 1; }
  peers=$(swift build -c release --package-path "$here/swift-peers" --show-bin-path)/SwiftPeers
  if [[ $(id -u) == 0 ]] && command -v unshare >/dev/null; then urlsession_tls=1; else
    urlsession_tls=0; echo "request-core.sh: not root: no URLSession handshake rows (its trust store is the system's)" >&2
  fi
fi

# A root and a leaf for 127.0.0.1.
cd "$work"
openssl req -x509 -newkey rsa:2048 -nodes -keyout root.key -out root.pem -subj /CN=bench-root -days 2 \
  -addext basicConstraints=critical,CA:true -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:false\nextendedKeyUsage=serverAuth\n' > leaf.ext
openssl x509 -req -in leaf.csr -CA root.pem -CAkey root.key -CAcreateserial -days 2 -extfile leaf.ext -out leaf.pem 2>/dev/null
# URLSession's trust stores (6): the system bundle with the bench root appended, and the bench root alone.
cat "$(curl-config --ca)" root.pem > system-and-root.pem
pin=$(openssl x509 -in leaf.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
http_port=$(port); https_port=$(port); slow_port=$(port)
cat > nginx.conf <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx.err;
daemon off;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $work; proxy_temp_path $work; fastcgi_temp_path $work; uwsgi_temp_path $work; scgi_temp_path $work;
  server {
    listen 127.0.0.1:$http_port;
    listen 127.0.0.1:$https_port ssl;
    ssl_certificate $work/leaf.pem;
    ssl_certificate_key $work/leaf.key;
    ssl_session_tickets off;
    ssl_session_cache off;
    location / { return 200 "ok\n"; }
  }
}
CONF
nginx -c "$work/nginx.conf" -p "$work" & pids+=($!)
cat > slow.py <<'PY'
import asyncio, sys
async def handle(reader, writer):
    try:
        await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:  # the readiness check below connects and closes
        writer.close(); return
    await asyncio.sleep(2)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
    await writer.drain(); writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]), backlog=2048)
    async with server: await server.serve_forever()
asyncio.run(main())
PY
python3 slow.py "$slow_port" & pids+=($!)
for p in $http_port $https_port $slow_port; do
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.05; done
done

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
run() { echo "  $*" >&2; "$@"; }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# The same request bytes as pinpath's: the session adds User-Agent and Accept-Language, which cost libcurl
# several thousand instructions per request to format; the bare floor sends neither.
same_request=()
# pinpath-bench's usage names its modes; `handshake` came with issue 30's engine.
checks=0
usage=$("$BENCH" 2>&1 || true)  # its usage, on a crash without arguments
if [[ $usage == *'get|handshake'* ]]; then checks=1; fi
while IFS= read -r line; do same_request+=("header=$line"); done < <("$BENCH" headers)
http="http://127.0.0.1:$http_port/"
https="https://127.0.0.1:$https_port/"

# Each measurement, once per round, its figures line appended to $work/NAME. A round runs every program
# once, one after the other, so that a change in the host's load between rounds moves both sides of a
# ratio; the report takes the median of each figure and of the rounds' ratios.
measure() {  # NAME, command...
  local name=$1; shift
  run "$@" >>"$work/$name"
}
# A peer's measurement: a peer that fails records `failed` for its round (its rows leave that round out) rather
# than ending the run.
measure_peer() {  # NAME, command...
  local name=$1; shift
  run "$@" >>"$work/$name" || { echo "request-core.sh: $name failed in this round" >&2; echo failed >>"$work/$name"; }
}
# URLSession with FILE as libcurl's default CA file, in a private mount namespace.
with_system_ca() {  # FILE, command...
  local file=$1; shift
  unshare -m --propagation private sh -c 'mount --bind "$0" "$1" && shift && exec "$@"' "$file" "$(curl-config --ca)" "$@"
}
for round in $(seq "$ROUNDS"); do
  echo "round $round of $ROUNDS:" >&2
  measure floor1 "$work/curl-floor" "$http" "$COUNT" 1
  measure floor1_same "$work/curl-floor" "$http" "$COUNT" 1 "${same_request[@]}"
  measure ours1 "$BENCH" get "$http" "$COUNT" 1 executor
  measure ours1_pool "$BENCH" get "$http" "$COUNT" 1
  measure floor16 "$work/curl-floor" "$http" $((COUNT * 4)) 16
  measure floor16_same "$work/curl-floor" "$http" $((COUNT * 4)) 16 "${same_request[@]}"
  measure ours16 "$BENCH" get "$http" $((COUNT * 4)) 16 executor
  measure ours16_pool "$BENCH" get "$http" $((COUNT * 4)) 16
  measure floor_tls "$work/curl-floor" "$https" "$HANDSHAKES" 1 fresh "ca=$work/root.pem"
  measure floor_tls_cache "$work/curl-floor" "$https" "$HANDSHAKES" 1 fresh "ca=$work/root.pem" cacache
  measure ours_tls "$BENCH" get "$https" "$HANDSHAKES" 1 fresh "ca=$work/root.pem" "pin=sha256/$pin"
  measure ours_tls_gate "$BENCH" get "$https" "$HANDSHAKES" 1 fresh "ca=$work/root.pem" "pin=sha256/$pin" gate
  if [[ $checks == 1 ]]; then
    measure ours_check "$BENCH" handshake "tls://127.0.0.1:$https_port" "$HANDSHAKES" 1 "ca=$work/root.pem" "pin=sha256/$pin"
    measure openssl_check "$work/openssl-floor" "$https" "$HANDSHAKES" "ca=$work/root.pem" handshake-only
  fi
  measure openssl_tls "$work/openssl-floor" "$https" "$HANDSHAKES" "ca=$work/root.pem"
  measure openssl_ctx_tls "$work/openssl-floor" "$https" "$HANDSHAKES" "ca=$work/root.pem" context-per-connection
  measure gated "$BENCH" get "$http" "$COUNT" 1 gate
  measure ungated "$BENCH" get "$http" "$COUNT" 1
  for label in "${env_labels[@]:1}"; do
    measure "ours1@$label" with_env "$label" "$BENCH" get "$http" "$COUNT" 1 executor
    measure "ours_tls@$label" with_env "$label" "$BENCH" get "$https" "$HANDSHAKES" 1 fresh "ca=$work/root.pem" "pin=sha256/$pin"
    measure "ours_tls_gate@$label" with_env "$label" "$BENCH" get "$https" "$HANDSHAKES" 1 fresh "ca=$work/root.pem" "pin=sha256/$pin" gate
    if [[ $checks == 1 ]]; then
      measure "ours_check@$label" with_env "$label" "$BENCH" handshake "tls://127.0.0.1:$https_port" "$HANDSHAKES" 1 "ca=$work/root.pem" "pin=sha256/$pin"
    fi
  done
  if [[ $PEERS == 1 ]]; then
    measure_peer ahc1 "$peers" ahc "$http" "$COUNT" 1
    measure_peer urlsession1 "$peers" urlsession "$http" "$COUNT" 1
    measure_peer ahc16 "$peers" ahc "$http" $((COUNT * 4)) 16
    measure_peer urlsession16 "$peers" urlsession "$http" $((COUNT * 4)) 16
    measure_peer ahc_tls "$peers" ahc "$https" "$HANDSHAKES" 1 fresh "ca=$work/root.pem"
    if [[ $urlsession_tls == 1 ]]; then
      measure_peer urlsession_tls_root with_system_ca "$work/root.pem" "$peers" urlsession "$https" "$HANDSHAKES" 1 fresh
      measure_peer urlsession_tls_system with_system_ca "$work/system-and-root.pem" "$peers" urlsession "$https" "$HANDSHAKES" 1 fresh
    fi
  fi
done
inflight=$(run "$BENCH" inflight "http://127.0.0.1:$slow_port/" 1000)

# Instructions per request (callgrind): the slope between a short and a long run of each program, so that
# start-up and the first connection cancel out. The count does not depend on what else runs on the
# machine. valgrind 3.19 cannot read the DWARF 5 debug information Swift writes: pinpath-bench is copied
# with `strip -g` (symbols kept) first; so copied, the static build runs under callgrind.
# Each run's instructions by object file (callgrind_annotate's self cost of every function, summed by the
# object it is in), one `object count` line each, in $work/ir.N.
ir() {  # N COMMAND...
  local n=$1
  shift
  valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.$n" "$@" >/dev/null 2>&1
  callgrind_annotate --threshold=100 --inclusive=no "$work/callgrind.$n" | python3 -c '
import collections, re, sys
by_object = collections.Counter()
for line in sys.stdin:
    if m := re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?.*?\s+\[(.*)\]\s*$", line):
        name = m.group(2).rsplit("/", 1)[-1]
        group = ("pinpath" if name == "pinpath-bench" else "libcurl" if name.startswith("libcurl")
                 else "openssl" if name.startswith(("libssl", "libcrypto")) else "libc" if name.startswith("libc.so") else "other")
        by_object[group] += int(m.group(1).replace(",", ""))
for group in ("pinpath", "libcurl", "openssl", "libc", "other"):
    print(group, by_object[group])
' >"$work/ir.$n"
  rm -f "$work/callgrind.$n"
}
instructions() {  # NAME SMALL LARGE COMMAND..., with the word @N where the number of requests goes: prints the
  # total per request, and leaves the split by object in $work/ir.NAME ("object per-request" lines)
  local name=$1 small=$2 large=$3 with_small=() with_large=() word
  shift 3
  for word in "$@"; do with_small+=("${word/#@N/$small}"); with_large+=("${word/#@N/$large}"); done
  ir "$name.small" "${with_small[@]}"
  ir "$name.large" "${with_large[@]}"
  paste -d ' ' "$work/ir.$name.small" "$work/ir.$name.large" | awk -v d=$((large - small)) '{ print $1, int(($4 - $2) / d) }' >"$work/ir.$name"
  awk '{ total += $2 } END { print total }' "$work/ir.$name"
}
if [[ $CALLGRIND == 1 ]] && command -v valgrind >/dev/null; then
  echo "instructions (callgrind):" >&2
  strip -g -o "$work/pinpath-bench" "$BENCH"
  ir_ours=$(instructions ours 500 2500 "$work/pinpath-bench" get "$http" @N 1 executor)
  ir_ours_pool=$(instructions ours_pool 500 2500 "$work/pinpath-bench" get "$http" @N 1)
  ir_floor=$(instructions floor 500 2500 "$work/curl-floor" "$http" @N 1)
  ir_floor_same=$(instructions floor_same 500 2500 "$work/curl-floor" "$http" @N 1 "${same_request[@]}")
  tls=(fresh "ca=$work/root.pem")
  ir_ours_tls=$(instructions ours_tls 10 40 "$work/pinpath-bench" get "$https" @N 1 "${tls[@]}" "pin=sha256/$pin")
  # libcurl's own fresh request with the same CA cache: the ratio the full-handshake goal is about.
  ir_floor_tls=$(instructions floor_tls 10 40 "$work/curl-floor" "$https" @N 1 fresh "ca=$work/root.pem" cacache)
  ir_openssl_tls=$(instructions openssl_tls 10 40 "$work/openssl-floor" "$https" @N "ca=$work/root.pem")
  ir_openssl_ctx_tls=$(instructions openssl_ctx_tls 10 40 "$work/openssl-floor" "$https" @N "ca=$work/root.pem" context-per-connection)
  if [[ $checks == 1 ]]; then
    ir_ours_check=$(instructions ours_check 10 40 "$work/pinpath-bench" handshake "tls://127.0.0.1:$https_port" @N 1 "ca=$work/root.pem" "pin=sha256/$pin")
    ir_openssl_check=$(instructions openssl_check 10 40 "$work/openssl-floor" "$https" @N "ca=$work/root.pem" handshake-only)
  fi
elif [[ $CALLGRIND == 1 ]]; then
  echo "valgrind is not installed: no instruction counts" >&2
fi

echo
# The other processes' load changes CPU per request too (caches, frequency): say what it was.
echo "load average (1, 5, 15 min): before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg)"
echo "medians of $ROUNDS rounds; the ratio is the median of the rounds' ratios"
header() { printf '%-52s %12s %12s %8s\n' "" "${2:-pinpath}" "$1" "ratio"; }  # PEER [OURS]
row() {  # label, pinpath's measurement, the peer's, field
  python3 - "$work/$2" "$work/$3" "$4" "$1" <<'PY'
import re, statistics, sys
def figures(path, field):  # one per round; None where a peer failed that round
    return [float(m.group(1)) if (m := re.search(rf"\b{field}=([0-9.]+)", line)) else None for line in open(path)]
ours, peer = figures(sys.argv[1], sys.argv[3]), figures(sys.argv[2], sys.argv[3])
pairs = [(o, p) for o, p in zip(ours, peer) if o is not None and p is not None]
if not pairs:
    print(f"{sys.argv[4]:<52} {'no round':>12}")
    sys.exit()
ratio = statistics.median(o / p for o, p in pairs)
print(f"{sys.argv[4]:<52} {statistics.median(o for o, _ in pairs):>12.2f} {statistics.median(p for _, p in pairs):>12.2f} {ratio:>8.2f}")
PY
}
# pinpath-bench's `executor` runs its request loops on the session's libcurl thread (Session.executor);
# "from the pool" is a task on the global executor, as most callers are.
header libcurl
row "keep-alive GET, 1 at a time (req/s)" ours1 floor1 rps
row "  from the pool (req/s)" ours1_pool floor1 rps
row "  CPU per request, 1 at a time (us)" ours1 floor1 cpu_us_per_request
row "  from the pool (us)" ours1_pool floor1 cpu_us_per_request
row "keep-alive GET, 16 at once (req/s)" ours16 floor16 rps
row "  from the pool (req/s)" ours16_pool floor16 rps
row "  CPU per request, 16 at once (us)" ours16 floor16 cpu_us_per_request
row "  from the pool (us)" ours16_pool floor16 cpu_us_per_request
# The same rows against the floor sending pinpath's header lines: what the Swift layer itself costs.
header "same req."
row "keep-alive GET, 1 at a time (req/s)" ours1 floor1_same rps
row "  CPU per request, 1 at a time (us)" ours1 floor1_same cpu_us_per_request
row "keep-alive GET, 16 at once (req/s)" ours16 floor16_same rps
row "  CPU per request, 16 at once (us)" ours16 floor16_same cpu_us_per_request
header libcurl
row "full-handshake HTTPS, pinned vs not (req/s)" ours_tls floor_tls rps
row "  CPU per handshake request (us)" ours_tls floor_tls cpu_us_per_request
header "c+cache"
row "  CPU per handshake request (us; goal <= 1.05)" ours_tls floor_tls_cache cpu_us_per_request
row "  pinned and gated (us)" ours_tls_gate floor_tls_cache cpu_us_per_request
if [[ $checks == 1 ]]; then
  header "openssl"
  row "tls:// check, handshake only, CPU (us)" ours_check openssl_check cpu_us_per_request
fi
header openssl
row "  CPU per handshake request, one SSL_CTX (us)" ours_tls openssl_tls cpu_us_per_request
row "  CPU per handshake request, SSL_CTX each (us)" ours_tls openssl_ctx_tls cpu_us_per_request
python3 - "$work/gated" "$work/ungated" <<'PY'
import re, statistics, sys
def figures(path, field):
    return [float(re.search(rf"\b{field}=([0-9.]+)", line).group(1)) for line in open(path)]
gated, ungated = sys.argv[1], sys.argv[2]
wall = statistics.median(1e6 / g - 1e6 / u for g, u in zip(figures(gated, "rps"), figures(ungated, "rps")))
cpu = statistics.median(g - u for g, u in zip(figures(gated, "cpu_us_per_request"), figures(ungated, "cpu_us_per_request")))
print(f"{'reachability gate: added wall time per request (us)':<52} {wall:>12.1f}")
print(f"{'reachability gate: added CPU per request (us)':<52} {cpu:>12.1f}")
PY
printf '%-52s %12s\n' "RSS with 1,000 requests in flight (MiB)" "$(field peak_rss_mib <<<"$inflight")"
for label in "${env_labels[@]:1}"; do
  echo "environment $label: ${env_assignments[$label]}"
  header "c+cache" "$label"
  row "  CPU per handshake request (us; goal <= 1.05)" "ours_tls@$label" floor_tls_cache cpu_us_per_request
  row "  pinned and gated (us)" "ours_tls_gate@$label" floor_tls_cache cpu_us_per_request
  if [[ $checks == 1 ]]; then
    header openssl "$label"
    row "tls:// check, handshake only, CPU (us)" "ours_check@$label" openssl_check cpu_us_per_request
  fi
  header plain "$label"
  row "full-handshake HTTPS, CPU per request (us)" "ours_tls@$label" ours_tls cpu_us_per_request
  row "  pinned and gated (us)" "ours_tls_gate@$label" ours_tls_gate cpu_us_per_request
  if [[ $checks == 1 ]]; then row "tls:// check, CPU (us)" "ours_check@$label" ours_check cpu_us_per_request; fi
  row "keep-alive GET, 1 at a time, CPU per request (us)" "ours1@$label" ours1 cpu_us_per_request
  row "  req/s" "ours1@$label" ours1 rps
done
if [[ $PEERS == 1 ]]; then
  # pinpath from the pool (a task on the global executor), as the peers' requests are.
  for peer in ahc urlsession; do
    if [[ $peer == ahc ]]; then header AHC; else header URLSession; fi
    row "keep-alive GET, 1 at a time (req/s)" ours1_pool ${peer}1 rps
    row "  CPU per request, 1 at a time (us)" ours1_pool ${peer}1 cpu_us_per_request
    row "keep-alive GET, 16 at once (req/s)" ours16_pool ${peer}16 rps
    row "  CPU per request, 16 at once (us)" ours16_pool ${peer}16 cpu_us_per_request
    if [[ $peer == ahc ]]; then
      row "full-handshake HTTPS (req/s)" ours_tls ahc_tls rps
      row "  CPU per handshake request (us)" ours_tls ahc_tls cpu_us_per_request
    elif [[ $urlsession_tls == 1 ]]; then
      row "full-handshake HTTPS, root alone as CA file (req/s)" ours_tls urlsession_tls_root rps
      row "  CPU per handshake request (us)" ours_tls urlsession_tls_root cpu_us_per_request
      row "  system bundle + root as CA file (req/s)" ours_tls urlsession_tls_system rps
      row "  CPU per handshake request (us)" ours_tls urlsession_tls_system cpu_us_per_request
    fi
  done
  # Requests a peer had to send again (URLSession now and then never completes one): they are in its figures.
  grep -H 'failed_attempts=[1-9]\|^failed' "$work"/ahc* "$work"/urlsession* 2>/dev/null | sed "s|^$work/|  sent again or failed: |" || true
  # The peers against libcurl's C loop, for reading the table of issue 30.
  header AHC libcurl
  row "keep-alive GET, 1 at a time (req/s)" floor1 ahc1 rps
  row "keep-alive GET, 16 at once (req/s)" floor16 ahc16 rps
fi
if [[ -n ${ir_ours:-} ]]; then
  irow() { printf '%-52s %12s %12s %8s\n' "$1" "$2" "$3" "$(python3 -c "print(f'{$2/$3:.2f}')")"; }
  header "floor"
  irow "instructions per keep-alive request, vs bare" "$ir_ours" "$ir_floor"
  irow "  from the pool, vs bare" "$ir_ours_pool" "$ir_floor"
  irow "  vs the same request" "$ir_ours" "$ir_floor_same"
  irow "instructions per handshake request, vs libcurl" "$ir_ours_tls" "$ir_floor_tls"
  irow "  vs OpenSSL, one SSL_CTX" "$ir_ours_tls" "$ir_openssl_tls"
  irow "  vs OpenSSL, SSL_CTX each" "$ir_ours_tls" "$ir_openssl_ctx_tls"
  if [[ -n ${ir_ours_check:-} ]]; then irow "instructions per tls:// check, one SSL_CTX" "$ir_ours_check" "$ir_openssl_check"; fi
  echo "instructions per request by object (pinpath = pinpath-bench with its static Swift runtime):"
  printf '%-28s %10s %10s %10s %10s %10s\n' "" pinpath libcurl openssl libc other
  for name in ours ours_pool floor floor_same ours_tls floor_tls ${ir_ours_check:+ours_check openssl_check}; do
    printf '%-28s %10s %10s %10s %10s %10s\n' "$name" $(awk '{ print $2 }' "$work/ir.$name")
  done
fi
