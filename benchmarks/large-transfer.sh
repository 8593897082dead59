#!/usr/bin/env bash
# Issue 32's large transfers, on loopback, in one run, against curl and libcurl used directly:
#   1. downloads to a file: `pinpath request URL -o FILE --ca-file CA --pin sha256/…` (the leaf's key) against
#      `curl -o FILE --cacert CA URL`, 100 MiB and 1 GiB: wall time and CPU (user + sys) of each run, and the
#      median of the rounds' ratios (goal: ≤ 1.1× for 1 GiB); pinpath's peak RSS (`/usr/bin/time -f %M`) for each
#      size (goal: ≤ 40 MiB, the same for both sizes);
#      and, since pinpath fsyncs the file before renaming it into place and curl leaves it to the kernel, the
#      wall time against `curl -o FILE && sync FILE` (coreutils' sync of one file is its fsync);
#   2. the same with the digest checked, `pinpath request … --sha256 HEX` against `curl -o FILE && sha256sum FILE`
#      (informational);
#   3. a streamed body through the library, `pinpath-bench stream` (Session.stream, its chunks counted, the loop
#      on the shared pool as most callers run it) against libcurl's write-callback loop
#      (benchmarks/curl-write-loop.c): MB/s (goal: ≥ 0.9×) and CPU per GiB, the largest size; and the same loop
#      on the session's libcurl thread (`Session.executor`: no thread woken per chunk).
# Each runs against two ports: nginx offers h2 (and http/1.1) on one and only http/1.1 on the other. curl and the
# C loop ask for h2 over TLS and take it where it is offered; pinpath's downloads and streams ask for http/1.1
# only (ALPN http/1.1: libcurl 7.88's 32 MiB HTTP/2 stream window defeats a paused stream's bound), so on the h2
# port pinpath over http/1.1 is measured against its peers over h2. nginx's access log says which protocol each
# client's requests had and how many bytes were sent, and the script prints that summary.
# Every program runs once per round, ROUNDS times, the order of the pair swapped each round; every output file is
# removed and the page cache's dirty pages written back (`sync`) before each timed run, so that no run pays for
# the previous one's writeback. Files are served from and written to $TMPDIR (default /tmp): the figures include
# that file system.
# It measures and prints; it asserts nothing.
#
#   swift build -c release --product pinpath --static-swift-stdlib
#   swift build -c release --product pinpath-bench --static-swift-stdlib
#   PINPATH=$PWD/.build/release/pinpath benchmarks/large-transfer.sh
#
# Environment: ROUNDS (default 5); SIZES in MiB (default "100 1024"); PROTOCOLS (default "h2 http1.1"); BENCH
# (pinpath-bench, by default next to PINPATH); SKIP, any of "download digest stream" (parts not to run); BUFFER,
# a CURLOPT_BUFFERSIZE for curl-write-loop's extra row (bytes; none by default); KEEP=1 keeps the work directory.
set -euo pipefail
bench=large-transfer
PINPATH=${PINPATH:?set PINPATH to the release pinpath binary (see the header)}
BENCH=${BENCH:-$(dirname "$PINPATH")/pinpath-bench}
ROUNDS=${ROUNDS:-5}
SIZES=${SIZES:-100 1024}
PROTOCOLS=${PROTOCOLS:-h2 http1.1}
SKIP=${SKIP:-}
BUFFER=${BUFFER:-}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/loopback-tls.sh
source "$here/lib/loopback-tls.sh"
command -v nginx >/dev/null || die "needs nginx (apt-get install nginx-light)"
skipped() { [[ " $SKIP " == *" $1 "* ]]; }
skipped stream || [[ -x $BENCH ]] || die "no pinpath-bench at $BENCH (build it, set BENCH, or SKIP=stream)"

cc -O2 -o "$work/curl-write-loop" "$here/curl-write-loop.c" $(pkg-config --cflags --libs libcurl)
make_tls_pki
ca=$work/root.pem
pin=sha256/$leaf_pin

# The served files: random bytes (nothing for a compression to gain), and their digests.
mkdir "$work/files" "$work/out"
declare -A digest
for size in $SIZES; do
    head -c "${size}M" /dev/urandom > "$work/files/$size.bin"
    digest[$size]=$(sha256sum "$work/files/$size.bin" | cut -d' ' -f1)
done

# nginx: one worker, the files as static content, h2 on one port and http/1.1 only on the other; each request's
# port, protocol, status, body bytes and client (its User-Agent) logged.
h2_port=$(port); h1_port=$(port)
cat > "$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx.err;
daemon off;
events { worker_connections 64; }
http {
  log_format transfers '\$server_port \$server_protocol \$status \$body_bytes_sent "\$http_user_agent"';
  access_log $work/access.log transfers;
  client_body_temp_path $work; proxy_temp_path $work; fastcgi_temp_path $work; uwsgi_temp_path $work; scgi_temp_path $work;
  ssl_certificate $work/leaf.pem;
  ssl_certificate_key $work/leaf.key;
  ssl_protocols TLSv1.2 TLSv1.3;
  root $work/files;
  server { listen 127.0.0.1:$h2_port ssl http2; }
  server { listen 127.0.0.1:$h1_port ssl; }
}
CONF
nginx -c "$work/nginx.conf" -p "$work" & pids+=($!)
wait_port "$h2_port"; wait_port "$h1_port"
url() { if [[ $1 == h2 ]]; then echo "https://127.0.0.1:$h2_port/$2.bin"; else echo "https://127.0.0.1:$h1_port/$2.bin"; fi; }

# One timed run: NAME COMMAND...; appends "wall_s= cpu_s= rss_mib=" to $work/r.NAME: wall time around the process,
# its user + sys and peak RSS (with its children's) from wait4's rusage, what `/usr/bin/time -f '%U %S %M'` prints,
# but in microseconds rather than GNU time's hundredths.
out=$work/out/body
cat > "$work/timed.py" <<'PY'
import os, sys, time
started = time.monotonic()
pid = os.spawnvp(os.P_NOWAIT, sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
wall = time.monotonic() - started
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(f"exit status {os.waitstatus_to_exitcode(status)}")
with open(sys.argv[1], "a") as figures:
    print(f"wall_s={wall:.3f} cpu_s={usage.ru_utime + usage.ru_stime:.3f} rss_mib={usage.ru_maxrss / 1024:.1f}", file=figures)
PY
timed() {
    local name=$1
    shift
    rm -f "$out"; sync
    echo "  $name" >&2
    if ! python3 "$work/timed.py" "$work/r.$name" "$@" > "$work/stdout" 2> "$work/stderr"; then
        cat "$work/stderr" >&2
        die "$name failed: $*"
    fi
}
# The body written must be the file's length (the digest rows check the bytes too).
check_length() { [[ $(stat -c %s "$out") == $(($1 * 1048576)) ]] || die "$2 wrote $(stat -c %s "$out") bytes, not $1 MiB"; }
# One run of each stream peer, its figures line appended to $work/r.NAME.
streamed() {
    local name=$1
    shift
    echo "  $name" >&2
    "$@" >> "$work/r.$name" || die "$name failed: $*"
}

largest=$(tr ' ' '\n' <<<"$SIZES" | sort -n | tail -1)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$ROUNDS"); do
    echo "round $round of $ROUNDS:" >&2
    for protocol in $PROTOCOLS; do
        for size in $SIZES; do
            u=$(url "$protocol" "$size")
            curl_run() { timed "curl-$protocol-$size" curl -sS --fail -o "$out" --cacert "$ca" "$u"; check_length "$size" curl; }
            pinpath_run() {
                timed "pinpath-$protocol-$size" "$PINPATH" request "$u" -o "$out" --ca-file "$ca" --pin "$pin"
                check_length "$size" pinpath
            }
            # curl's file is left to the kernel's writeback; pinpath fsyncs its file before renaming it into place.
            curl_fsync() {
                timed "curl-fsync-$protocol-$size" sh -c 'curl -sS --fail -o "$1" --cacert "$2" "$3" && sync "$1"' sh "$out" "$ca" "$u"
                check_length "$size" curl
            }
            curl_digest() {
                timed "curl-digest-$protocol-$size" sh -c 'curl -sS --fail -o "$1" --cacert "$2" "$3" && sha256sum "$1"' sh \
                    "$out" "$ca" "$u"
                [[ $(cut -d' ' -f1 "$work/stdout") == "${digest[$size]}" ]] || die "curl's body does not match the file"
            }
            pinpath_digest() {
                timed "pinpath-digest-$protocol-$size" "$PINPATH" request "$u" -o "$out" --ca-file "$ca" --pin "$pin" \
                    --sha256 "${digest[$size]}"
                check_length "$size" "pinpath --sha256"
            }
            if ! skipped download; then
                if ((round % 2)); then curl_run; pinpath_run; curl_fsync; else curl_fsync; pinpath_run; curl_run; fi
            fi
            if ! skipped digest; then
                if ((round % 2)); then curl_digest; pinpath_digest; else pinpath_digest; curl_digest; fi
            fi
        done
        if ! skipped stream; then
            u=$(url "$protocol" "$largest")
            floor() { streamed "floor-$protocol" "$work/curl-write-loop" "$u" "ca=$ca"; }
            ours() { streamed "stream-$protocol" "$BENCH" stream "$u" "ca=$ca" "pin=$pin"; }
            on_thread() { streamed "stream-executor-$protocol" "$BENCH" stream "$u" "ca=$ca" "pin=$pin" executor; }
            if ((round % 2)); then floor; ours; on_thread; else on_thread; ours; floor; fi
            [[ -z $BUFFER ]] || streamed "floor-buffer-$protocol" "$work/curl-write-loop" "$u" "ca=$ca" "buffer=$BUFFER"
        fi
    done
done
rm -f "$out"

echo
# The other processes' load moves every figure here (CPU frequency, caches, writeback): say what it was.
echo "load average (1, 5, 15 min): before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$(nproc) cores; files in $(df --output=source,fstype "$work" | tail -1 | tr -s ' ')"
echo "medians of $ROUNDS rounds; a ratio is the median of the rounds' ratios"
# The client from its User-Agent: curl/…, pinpath/… (pinpath request and pinpath-bench), none (the C loop).
echo "nginx served (port, client: protocol status body-bytes: requests):"
awk -v h2="$h2_port" -v h1="$h1_port" '
    {
        port = $1 == h2 ? "h2 port" : $1 == h1 ? "http/1.1 port" : $1
        agent = $5; gsub(/"/, "", agent); sub(/\/.*/, "", agent)
        client = agent == "curl" ? "curl" : agent == "pinpath" ? "pinpath" : agent == "-" ? "C loop" : "other"
        print port ", " client ": " $2 " " $3 " " $4
    }' "$work/access.log" | sort | uniq -c | awk '{ count = $1; $1 = ""; printf " %s: %d\n", $0, count }'
# Rows: LABEL OURS PEER FIELD [invert]; prints the medians and the median ratio (ours / peer), and appends
# NAME=RATIO to the summary line when a name is given.
summary=()
row() {
    local line
    line=$(python3 - "$work/r.$2" "$work/r.$3" "$4" "$1" <<'PY'
import re, statistics, sys
def figures(path, field):
    return [float(m.group(1)) for line in open(path) if (m := re.search(rf"\b{field}=([0-9.]+)", line))]
ours, peer = figures(sys.argv[1], sys.argv[3]), figures(sys.argv[2], sys.argv[3])
ratio = statistics.median(o / p for o, p in zip(ours, peer))
print(f"{sys.argv[4]:<50} {statistics.median(ours):>10.2f} {statistics.median(peer):>10.2f} {ratio:>7.2f}")
PY
)
    echo "$line"
    [[ -z ${5:-} ]] || summary+=("$5=$(awk '{ print $NF }' <<<"$line")")
}
median() {  # NAME FIELD
    python3 - "$work/r.$1" "$2" <<'PY'
import re, statistics, sys
field = re.compile(rf"\b{sys.argv[2]}=([0-9.]+)")
print(f"{statistics.median(float(field.search(line).group(1)) for line in open(sys.argv[1])):.1f}")
PY
}
for protocol in $PROTOCOLS; do
    echo
    if [[ $protocol == h2 ]]; then
        echo "== h2 port (h2 offered: curl and the C loop take it, pinpath asks for http/1.1) =="
    else
        echo "== http/1.1 port =="
    fi
    if ! skipped download; then
        printf '%-50s %10s %10s %7s\n' "" pinpath "curl -o" ratio
        for size in $SIZES; do
            row "$size MiB to a file: wall time (s)" "pinpath-$protocol-$size" "curl-$protocol-$size" wall_s "${protocol}_${size}_wall"
            row "  CPU, user + sys (s)" "pinpath-$protocol-$size" "curl-$protocol-$size" cpu_s "${protocol}_${size}_cpu"
            row "  peak RSS (MiB)" "pinpath-$protocol-$size" "curl-$protocol-$size" rss_mib
            row "  against curl -o && sync FILE: wall time (s)" "pinpath-$protocol-$size" "curl-fsync-$protocol-$size" wall_s \
                "${protocol}_${size}_wall_vs_fsync"
            summary+=("${protocol}_${size}_rss_mib=$(median "pinpath-$protocol-$size" rss_mib)")
        done
    fi
    if ! skipped digest; then
        printf '%-50s %10s %10s %7s\n' "" "--sha256" "+sha256sum" ratio
        for size in $SIZES; do
            row "$size MiB, digest checked: wall time (s)" "pinpath-digest-$protocol-$size" "curl-digest-$protocol-$size" wall_s \
                "${protocol}_${size}_digest_wall"
            row "  CPU, user + sys (s)" "pinpath-digest-$protocol-$size" "curl-digest-$protocol-$size" cpu_s "${protocol}_${size}_digest_cpu"
        done
    fi
    if ! skipped stream; then
        printf '%-50s %10s %10s %7s\n' "" stream "C loop" ratio
        row "$largest MiB streamed: throughput (MB/s)" "stream-$protocol" "floor-$protocol" mbps "${protocol}_stream_mbps"
        row "  CPU per GiB (s)" "stream-$protocol" "floor-$protocol" cpu_s_per_gib "${protocol}_stream_cpu"
        row "  loop on Session.executor: throughput (MB/s)" "stream-executor-$protocol" "floor-$protocol" mbps \
            "${protocol}_stream_executor_mbps"
        row "  loop on Session.executor: CPU per GiB (s)" "stream-executor-$protocol" "floor-$protocol" cpu_s_per_gib \
            "${protocol}_stream_executor_cpu"
        echo "  pinpath-bench's mean chunk (KiB): $(median "stream-$protocol" mean_chunk_kib) from the pool," \
            "$(median "stream-executor-$protocol" mean_chunk_kib) on the executor; peak RSS (MiB):" \
            "$(median "stream-$protocol" peak_rss_mib), $(median "stream-executor-$protocol" peak_rss_mib)"
        echo "  versions used: pinpath-bench $(sed -n 's/.*version=\([^ ]*\).*/\1/p' "$work/r.stream-$protocol" | sort -u | xargs)," \
            "C loop $(sed -n 's/.*version=\([^ ]*\).*/\1/p' "$work/r.floor-$protocol" | sort -u | xargs)"
        if [[ -n $BUFFER ]]; then
            row "  C loop with CURLOPT_BUFFERSIZE $BUFFER (MB/s)" "floor-buffer-$protocol" "floor-$protocol" mbps
        fi
    fi
done
echo
echo "large-transfer: ${summary[*]}"
