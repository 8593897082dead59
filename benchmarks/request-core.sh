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
#   4. resident memory with 1,000 requests in flight.
# Servers: nginx (Debian's package) for 1-3, a Python asyncio server that answers after 2 s for 4.
# It measures and prints; it asserts nothing.
#
#   swift build -c release --product pinpath-bench --static-swift-stdlib
#   BENCH=$PWD/.build/release/pinpath-bench benchmarks/request-core.sh
set -euo pipefail
BENCH=${BENCH:?set BENCH to the pinpath-bench binary (see the header)}
COUNT=${COUNT:-5000}
HANDSHAKES=${HANDSHAKES:-500}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/pinpath-request-bench.XXXXXX)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
command -v nginx >/dev/null || { echo "request-core.sh: needs nginx (apt-get install nginx-light)" >&2; exit 69; }

cc -O2 -o "$work/curl-floor" "$here/curl-floor.c" $(pkg-config --cflags --libs libcurl)
cc -O2 -o "$work/openssl-floor" "$here/openssl-floor.c" $(pkg-config --cflags --libs openssl)

# A root and a leaf for 127.0.0.1.
cd "$work"
openssl req -x509 -newkey rsa:2048 -nodes -keyout root.key -out root.pem -subj /CN=bench-root -days 2 \
  -addext basicConstraints=critical,CA:true -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:false\nextendedKeyUsage=serverAuth\n' > leaf.ext
openssl x509 -req -in leaf.csr -CA root.pem -CAkey root.key -CAcreateserial -days 2 -extfile leaf.ext -out leaf.pem 2>/dev/null
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
    await reader.readuntil(b"\r\n\r\n")
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
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }
run() { echo "  $*" >&2; "$@"; }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "runs:" >&2
# The same request bytes as pinpath's: the session adds User-Agent and Accept-Language, which cost libcurl
# several thousand instructions per request to format; the bare floor sends neither.
same_request=()
while IFS= read -r line; do same_request+=("header=$line"); done < <("$BENCH" headers)
floor1=$(run "$work/curl-floor" "http://127.0.0.1:$http_port/" "$COUNT" 1)
floor1_same=$(run "$work/curl-floor" "http://127.0.0.1:$http_port/" "$COUNT" 1 "${same_request[@]}")
ours1=$(run "$BENCH" get "http://127.0.0.1:$http_port/" "$COUNT" 1 executor)
ours1_pool=$(run "$BENCH" get "http://127.0.0.1:$http_port/" "$COUNT" 1)
floor16=$(run "$work/curl-floor" "http://127.0.0.1:$http_port/" $((COUNT * 4)) 16)
floor16_same=$(run "$work/curl-floor" "http://127.0.0.1:$http_port/" $((COUNT * 4)) 16 "${same_request[@]}")
ours16=$(run "$BENCH" get "http://127.0.0.1:$http_port/" $((COUNT * 4)) 16 executor)
ours16_pool=$(run "$BENCH" get "http://127.0.0.1:$http_port/" $((COUNT * 4)) 16)
floor_tls=$(run "$work/curl-floor" "https://127.0.0.1:$https_port/" "$HANDSHAKES" 1 fresh "ca=$work/root.pem")
ours_tls=$(run "$BENCH" get "https://127.0.0.1:$https_port/" "$HANDSHAKES" 1 fresh "ca=$work/root.pem" "pin=sha256/$pin")
openssl_tls=$(run "$work/openssl-floor" "https://127.0.0.1:$https_port/" "$HANDSHAKES" "ca=$work/root.pem")
openssl_ctx_tls=$(run "$work/openssl-floor" "https://127.0.0.1:$https_port/" "$HANDSHAKES" "ca=$work/root.pem" context-per-connection)
gated=$(run "$BENCH" get "http://127.0.0.1:$http_port/" "$COUNT" 1 gate)
ungated=$(run "$BENCH" get "http://127.0.0.1:$http_port/" "$COUNT" 1)
inflight=$(run "$BENCH" inflight "http://127.0.0.1:$slow_port/" 1000)

echo
# The other processes' load changes CPU per request too (caches, frequency): say what it was.
echo "load average (1, 5, 15 min): before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-52s %12s %12s %8s\n' "" "pinpath" "libcurl" "ratio"
row() {  # label, pinpath's line, the peer's line, field
  printf '%-52s %12s %12s %8s\n' "$1" "$(field "$4" <<<"$2")" "$(field "$4" <<<"$3")" "$(ratio "$(field "$4" <<<"$2")" "$(field "$4" <<<"$3")")"
}
# pinpath-bench's `executor` runs its request loops on the session's libcurl thread (Session.executor);
# "from the pool" is a task on the global executor, as most callers are.
row "keep-alive GET, 1 at a time (req/s)" "$ours1" "$floor1" rps
row "  from the pool (req/s)" "$ours1_pool" "$floor1" rps
row "  CPU per request, 1 at a time (us)" "$ours1" "$floor1" cpu_us_per_request
row "  from the pool (us)" "$ours1_pool" "$floor1" cpu_us_per_request
row "keep-alive GET, 16 at once (req/s)" "$ours16" "$floor16" rps
row "  from the pool (req/s)" "$ours16_pool" "$floor16" rps
row "  CPU per request, 16 at once (us)" "$ours16" "$floor16" cpu_us_per_request
row "  from the pool (us)" "$ours16_pool" "$floor16" cpu_us_per_request
# The same rows against the floor sending pinpath's header lines: what the Swift layer itself costs.
printf '%-52s %12s %12s %8s\n' "" "pinpath" "same req." "ratio"
row "keep-alive GET, 1 at a time (req/s)" "$ours1" "$floor1_same" rps
row "  CPU per request, 1 at a time (us)" "$ours1" "$floor1_same" cpu_us_per_request
row "keep-alive GET, 16 at once (req/s)" "$ours16" "$floor16_same" rps
row "  CPU per request, 16 at once (us)" "$ours16" "$floor16_same" cpu_us_per_request
printf '%-52s %12s %12s %8s\n' "" "pinpath" "libcurl" "ratio"
row "full-handshake HTTPS, pinned vs not (req/s)" "$ours_tls" "$floor_tls" rps
row "  CPU per handshake request (us)" "$ours_tls" "$floor_tls" cpu_us_per_request
printf '%-52s %12s %12s %8s\n' "" "pinpath" "openssl" "ratio"
row "  CPU per handshake request, one SSL_CTX (us)" "$ours_tls" "$openssl_tls" cpu_us_per_request
row "  CPU per handshake request, SSL_CTX each (us)" "$ours_tls" "$openssl_ctx_tls" cpu_us_per_request
gate_us=$(python3 -c "print(f'{1e6/$(field rps <<<"$gated") - 1e6/$(field rps <<<"$ungated"):.1f}')")
gate_cpu=$(python3 -c "print(f'{$(field cpu_us_per_request <<<"$gated") - $(field cpu_us_per_request <<<"$ungated"):.1f}')")
printf '%-52s %12s\n' "reachability gate: added wall time per request (us)" "$gate_us"
printf '%-52s %12s\n' "reachability gate: added CPU per request (us)" "$gate_cpu"
printf '%-52s %12s\n' "RSS with 1,000 requests in flight (MiB)" "$(field peak_rss_mib <<<"$inflight")"
