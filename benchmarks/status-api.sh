#!/usr/bin/env bash
# The agent's CPU to render and serve one `GET /api/v1/status` (issue 27: goal ≤ 20 ms for 1,000 endpoints).
#
# Against one local nginx (lib/loopback-tls.sh: a generated root and an RSA 2048 leaf for 127.0.0.1), pinpath run
# probes N endpoints (default 1000) under a public_key policy every INTERVAL seconds, so that every endpoint has a
# last probe, a certificate with its chain, a policy and its pins. After FILL probes of each (default 30: the
# document's duration rings are full, the document is as large as it gets), REQUESTS requests of /api/v1/status
# (default 20) are made over the listener's Unix socket, each more than a second after the last (so that each renders
# the document; a second request at once, which shares it, is measured apart), and for each the CPU time of NIO's
# event loop thread (the thread named NIO-ELT-…, which renders and serves the document and does nothing else; the
# first field of /proc/PID/task/TID/schedstat, in nanoseconds) is read before and after. Prints the median, the
# range and the document's size. Measures and prints; asserts nothing.
#
# Usage:
#   swift build -c release --product pinpath --static-swift-stdlib
#   PINPATH=$PWD/.build/release/pinpath benchmarks/status-api.sh
# Variables: PINPATH (required), N (1000), INTERVAL (seconds, 2), FILL (probes per endpoint before measuring, 30),
# REQUESTS (20), KEEP=1 keeps the work directory. Needs nginx (nginx-light is installed when missing: root),
# openssl, curl and python3. Loopback only.
set -euo pipefail

PINPATH=${PINPATH:?set PINPATH to a release pinpath binary (see the header)}
N=${N:-1000}
INTERVAL=${INTERVAL:-2}
FILL=${FILL:-30}
REQUESTS=${REQUESTS:-20}
KEEP=${KEEP:-0}
bench=status-api
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/loopback-tls.sh
source "$here/lib/loopback-tls.sh"
[[ -x $PINPATH ]] || die "no executable at PINPATH=$PINPATH"
for variable in N INTERVAL FILL REQUESTS; do
    [[ ${!variable} =~ ^[1-9][0-9]*$ ]] || die "$variable must be a positive whole number (got '${!variable}')"
done
install_missing no-blackbox
start_tls_nginx
cd "$work"

socket=$work/metrics.sock
{
    echo "events: {output: $work/events.jsonl, max_size: 1GiB}"
    echo "metrics: {listen: \"$socket\"}"
    echo "policies:"
    echo "  bench: {mode: public_key, pins: [\"sha256/$root_pin\", \"sha256/$leaf_pin\"], ca_file: $work/root.pem}"
    echo "endpoints:"
    for ((i = 1; i <= N; i++)); do
        echo "  - {name: e$i, url: \"$base/e$i\", interval: ${INTERVAL}s, timeout: $((INTERVAL * 750))ms, policy: bench}"
    done
} > pinpath.yaml
"$PINPATH" run --config pinpath.yaml >/dev/null & pid=$!
pids+=("$pid")

fetch() { curl -s --max-time 30 --unix-socket "$socket" http://localhost/api/v1/status; }

wait_s=$((FILL * INTERVAL + 5))
echo "status-api: $N endpoints every ${INTERVAL}s; waiting ${wait_s}s for $FILL probes of each" >&2
sleep "$wait_s"
fetch > document.json
python3 - "$N" document.json <<'PY'
import json, sys
document = json.load(open(sys.argv[2]))
endpoints = document["endpoints"]
assert len(endpoints) == int(sys.argv[1]), f"{len(endpoints)} endpoints listed"
durations = sorted(len(e["durations"]) for e in endpoints)
with_certificate = sum(1 for e in endpoints if e["certificate"])
print(f"status-api: document: {len(endpoints)} endpoints, {with_certificate} with a certificate, "
      f"durations per endpoint {durations[0]}..{durations[-1]}, {len(document['events'])} events", file=sys.stderr)
PY

# Each round: a request that renders (more than a second after the last: the listener renders at most once a second
# and shares that document with the requests of the same second), then one that gets the shared document.
rendered=() shared=()
for ((r = 0; r < REQUESTS; r++)); do
    sleep 1.1
    before=$(loop_cpu_ns "$pid")
    bytes=$(fetch | wc -c)
    after=$(loop_cpu_ns "$pid")
    rendered+=("$((after - before))")
    before=$(loop_cpu_ns "$pid")
    fetch > /dev/null
    after=$(loop_cpu_ns "$pid")
    shared+=("$((after - before))")
done
{ printf '%s\n' "${rendered[@]}"; echo; printf '%s\n' "${shared[@]}"; } | python3 -c '
import statistics, sys
rendered, shared = sys.stdin.read().split("\n\n")
for name, text in (("status_cpu_ms", rendered), ("shared_cpu_ms", shared)):
    ms = [int(line) / 1e6 for line in text.split() if line.strip()]
    print(f"N={sys.argv[1]} {name}_median={statistics.median(ms):.2f} min={min(ms):.2f} max={max(ms):.2f} "
          f"requests={len(ms)} bytes={sys.argv[2]}")
' "$N" "$bytes"
