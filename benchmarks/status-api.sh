#!/usr/bin/env bash
# The agent's CPU to render and serve one `GET /api/v1/status` (issue 27: goal ≤ 20 ms for 1,000 endpoints).
#
# Against one local nginx (TLS, a generated root and an RSA 2048 leaf for 127.0.0.1, as agent-scale.sh), pinpath run
# probes N endpoints (default 1000) under a public_key policy every INTERVAL seconds, so that every endpoint has a
# last probe, a certificate with its chain, a policy and its pins. After FILL probes of each (default 30: the
# document's duration rings are full, the document is as large as it gets), REQUESTS requests of /api/v1/status
# (default 20) are made one after another over the listener's Unix socket, and for each the CPU time of NIO's
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
die() { echo "status-api: $*" >&2; exit 1; }
[[ -x $PINPATH ]] || die "no executable at PINPATH=$PINPATH"
for variable in N INTERVAL FILL REQUESTS; do
    [[ ${!variable} =~ ^[1-9][0-9]*$ ]] || die "$variable must be a positive whole number (got '${!variable}')"
done
if ! command -v nginx >/dev/null; then
    echo "status-api: installing nginx-light" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nginx-light >&2
fi

work=$(mktemp -d /tmp/status-api.XXXXXX)
pids=()
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    for pid in "${pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; fi
    done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [[ $KEEP == 1 ]]; then echo "status-api: kept $work" >&2; else rm -rf "$work"; fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cd "$work"
openssl req -x509 -newkey rsa:2048 -nodes -keyout root.key -out root.pem -subj /CN=status-api-root -days 400 \
    -addext basicConstraints=critical,CA:true -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:false\nextendedKeyUsage=serverAuth\n' > leaf.ext
openssl x509 -req -in leaf.csr -CA root.pem -CAkey root.key -CAcreateserial -days 400 -extfile leaf.ext -out leaf.pem 2>/dev/null
pin() { openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > nginx.conf <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx.err;
daemon off;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $work; proxy_temp_path $work; fastcgi_temp_path $work; uwsgi_temp_path $work; scgi_temp_path $work;
  server {
    listen 127.0.0.1:$port ssl backlog=4096;
    ssl_certificate $work/leaf.pem;
    ssl_certificate_key $work/leaf.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    location / { return 200 "ok\n"; }
  }
}
CONF
nginx -c "$work/nginx.conf" -p "$work" & pids+=($!)
for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done

socket=$work/metrics.sock
{
    echo "events: {output: $work/events.jsonl, max_size: 1GiB}"
    echo "metrics: {listen: \"$socket\"}"
    echo "policies:"
    echo "  bench: {mode: public_key, pins: [\"sha256/$(pin root.pem)\", \"sha256/$(pin leaf.pem)\"], ca_file: $work/root.pem}"
    echo "endpoints:"
    for ((i = 1; i <= N; i++)); do
        echo "  - {name: e$i, url: \"https://127.0.0.1:$port/e$i\", interval: ${INTERVAL}s, timeout: $((INTERVAL * 750))ms, policy: bench}"
    done
} > pinpath.yaml
"$PINPATH" run --config pinpath.yaml >/dev/null & pid=$!
pids+=("$pid")

fetch() { curl -s --max-time 30 --unix-socket "$socket" http://localhost/api/v1/status; }
# CPU nanoseconds of NIO's event loop thread so far.
loop_cpu_ns() {
    local task
    for task in /proc/"$pid"/task/*; do
        if [[ $(cat "$task/comm" 2>/dev/null) == NIO-ELT* ]]; then read -r ns _ < "$task/schedstat"; echo "$ns"; return; fi
    done
    echo 0
}

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

samples=()
for ((r = 0; r < REQUESTS; r++)); do
    before=$(loop_cpu_ns)
    bytes=$(fetch | wc -c)
    after=$(loop_cpu_ns)
    samples+=("$((after - before))")
done
printf '%s\n' "${samples[@]}" | python3 -c '
import statistics, sys
ms = [int(line) / 1e6 for line in sys.stdin if line.strip()]
print(f"N={sys.argv[1]} status_cpu_ms_median={statistics.median(ms):.2f} min={min(ms):.2f} max={max(ms):.2f} "
      f"requests={len(ms)} bytes={sys.argv[2]}")
' "$N" "$bytes"
