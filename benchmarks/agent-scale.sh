#!/usr/bin/env bash
# agent-scale.sh: the agent at scale (issue 5), next to blackbox_exporter and libcurl used directly.
#
# For each N in $NS (default "1000 10000"), against one local nginx:
#   1. pinpath run with N endpoints at a 60 s interval, for DURATION seconds: CPU ms per probe (all its CPU,
#      start-up included, at SIGTERM, over agent.stopping's probes), CPU % in steady state (from the moment
#      every endpoint has reported once to SIGTERM), peak RSS (VmRSS sampled every second), probes and
#      failures, and the p99 lateness of probe starts against their schedule (agent.stopping). Once per policy in MODES: `pinned` (public_key, 2 pins: root and leaf) and/or `none`.
#      A mode with `+listen` (`pinned+listen`) also sets `metrics.listen` and scrapes `/metrics` with curl every
#      15 s (Prometheus's default interval) during the run, so its CPU per probe includes serving them; after the
#      run's figures are taken, SCRAPES more scrapes one after another give the CPU of one scrape: the median
#      over SCRAPES of the CPU time of NIO's event loop thread (/proc/PID/task/TID/schedstat, the thread named
#      NIO-ELT-…), which renders and serves /metrics and does nothing else, during each scrape.
#   2. Debian's prometheus-blackbox-exporter probing the same N URLs at the same rate (N/60 per second, evenly
#      spread) for DURATION seconds, driven by a small Python asyncio client: the exporter's own CPU per probe
#      and peak RSS. The driver's CPU is not counted (it runs in its own process; only the exporter's /proc
#      figures are read). The exporter's CPU includes serving the /probe request and writing its metrics:
#      that is how it is used (a Prometheus scrape per probe).
#   3. The request core's own full-handshake request (`core`): benchmarks/PinpathBench's `paced` mode, in
#      process through the Session API with the agent's probe options (fresh connection, the pinned policy
#      with the bench root, the reachability gate with the host watched), N/2 requests paced at N/60 per
#      second (so 30 s), each started as its own task: CPU per request. The agent's CPU per probe over this is
#      what the agent spends beyond the request (issue 17: at most 1.15×).
#   4. benchmarks/curl-floor.c: N/2 full-handshake requests (fresh connection, CAINFO = the bench root, a new
#      easy handle each, one multi handle) paced at the same rate (so 30 s): CPU per request. Twice: as is
#      (`curl`: Debian's libcurl has a default CA path, and with one set libcurl 7.88 reads the CA file into a
#      new X509_STORE for every connection), and with CURLOPT_CAPATH cleared so that its CA cache applies
#      (`curl+cache`: one store for all connections, as pinpath shares its trust store): the true floor.
#      Paced matters: unpaced, back to back, the same requests cost ~30% less CPU (warm caches).
# The three run one after another, not at once, so that they do not take CPU from each other (2 cores).
#
# nginx: worker_processes 1, TLS with a generated root and a leaf for 127.0.0.1 (RSA 2048, valid 400 days, so
# that no expiry warning is due), TLS 1.2 and 1.3 (nginx 1.22's default stops at 1.2), no session cache and no
# tickets (every connection is a full handshake), `return 200`. Endpoints differ only by path
# (https://127.0.0.1:PORT/e1 … /eN): one host and port, so the agent has one monitor target, as a fleet of
# endpoints on one load balancer would.
#
# KINDS (default "https") chooses what is probed: `https` (the above) and/or `tls` (issue 14: pinpath's
# tls://127.0.0.1:PORT endpoints, a TCP connection and a full handshake under the policy, then close; and
# blackbox_exporter's tcp prober with `tls: true`, its "tls" module, on the same nginx). Both kinds in one run
# give CPU per tls:// probe next to blackbox_exporter's tls module and next to pinpath's own https probe.
# The libcurl floor is an https request and runs for the https kind only.
# `tls` also runs OpenSSL's floor of a tls:// probe (issue 30): benchmarks/openssl-floor.c with one SSL_CTX and
# trust store, handshake only (verify, close_notify, close), N/2 connections paced at N/60 per second (`ossl`).
# `tcp` (issue 30): pinpath's tcp://127.0.0.1:PORT endpoints (connect only) on the same nginx port, against
# blackbox_exporter's tcp prober without TLS (module tcp_connect).
# Every pinpath run also reports its threads: the most seen in /proc/PID/status (sampled every 0.5 s) and the
# threads it created in steady state (perf's task:task_newtask tracepoint on the process, from the end of the
# first pass to SIGTERM; `nan` without perf): no thread per probe means that count stays near 0 however many
# probes ran.
#
# It measures and prints; it asserts nothing. The issue's goals, for reading the table (issue 17): CPU per
# probe at most 1.15× the request core's (pp/core) and at most 0.5× blackbox_exporter's (pp/bb), RSS under
# 150 MiB at 10,000 endpoints, p99 lateness under 100 ms.
#
# Environment:
#   PINPATH   the release binary (required):
#             swift build -c release --product pinpath --static-swift-stdlib
#             PINPATH=$PWD/.build/release/pinpath benchmarks/agent-scale.sh
#   BENCH     the release pinpath-bench binary, for the request core's figure (default: beside PINPATH;
#             swift build -c release --product pinpath-bench --static-swift-stdlib); SKIP=core leaves it out
#   NS        endpoint counts (default "1000 10000")
#   DURATION  seconds each of pinpath and blackbox_exporter runs (default 180: every endpoint is probed
#             2-3 times; the agent's first pass is spread over the first N ms, at most 10 s)
#   MODES     pinpath policies to run: "pinned", "none", each optionally with "+listen" (default "pinned");
#             "pinned pinned+listen" compares the agent's CPU per probe without and with /metrics
#   KINDS     probe kinds: any of "https", "tls", "tcp" (default "https")
#   SCRAPES   back-to-back scrapes of /metrics that measure one scrape's CPU in +listen modes (default 20)
#   SKIP      any of "blackbox core floor openssl" to leave those out (default none)
#   KEEP      1 to keep the work directory (events, configs, RSS samples); its path is printed
#   ENVS      more pinpath runs under other environments, interleaved with the plain one (issue 30's allocator
#             experiment): whitespace-separated `label:VAR=value[,VAR=value…]` (benchmarks/lib/environments.sh), e.g.
#             ENVS="mimalloc:LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"; only pinpath gets them.
#             Their rows read `MODE@label` (the plain run's `MODE`); the floors and blackbox_exporter run once.
#   ROUNDS    times every pinpath run of a kind (each mode under each environment) is repeated, round after round,
#             before blackbox_exporter's (default 1); rows of round 2 on read `…/2`
#
# Needs root only for apt-get (nginx-light and prometheus-blackbox-exporter are installed when missing), plus
# openssl, python3, cc and libcurl's headers (libcurl4-openssl-dev). Loopback only.
set -euo pipefail

PINPATH=${PINPATH:?set PINPATH to a release pinpath binary (see the header)}
BENCH=${BENCH:-$(dirname "$PINPATH")/pinpath-bench}
NS=${NS:-1000 10000}
DURATION=${DURATION:-180}
MODES=${MODES:-pinned}
KINDS=${KINDS:-https}
SCRAPES=${SCRAPES:-20}
SKIP=${SKIP:-}
KEEP=${KEEP:-0}
ROUNDS=${ROUNDS:-1}
INTERVAL=60
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=agent-scale
source "$here/lib/loopback-tls.sh"
source "$here/lib/environments.sh"
[[ -x $PINPATH ]] || die "no executable at PINPATH=$PINPATH"
[[ $SKIP == *core* || -x $BENCH ]] || die "no executable at BENCH=$BENCH (build pinpath-bench, or SKIP=core)"
[[ $DURATION =~ ^[0-9]+$ && $DURATION -ge 30 ]] || die "DURATION must be a number of seconds, at least 30"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer (got '$ROUNDS')"
for n in $NS; do [[ $n =~ ^[1-9][0-9]*$ ]] || die "NS must list positive integers (got '$n')"; done
for kind in $KINDS; do [[ $kind == https || $kind == tls || $kind == tcp ]] || die "KINDS must list https, tls and/or tcp (got '$kind')"; done

if [[ $SKIP == *blackbox* ]]; then install_missing no-blackbox; else install_missing; fi

cc -O2 -o "$work/curl-floor" "$here/curl-floor.c" $(pkg-config --cflags --libs libcurl)
cc -O2 -o "$work/openssl-floor" "$here/openssl-floor.c" $(pkg-config --cflags --libs openssl)

start_tls_nginx

# Writes a pinpath configuration with N endpoints of a kind (https: one path each; tls and tcp: the same host and
# port under N names) and the given policy mode (a tcp:// endpoint has none: no TLS), its events to EVENTS (a
# `+listen` mode's metrics socket beside them, one per run).
write_config() {
    local n=$1 mode=$2 file=$3 kind=$4 events=$5
    {
        echo "events: {output: $events, probes: changes, max_size: 1GiB}"
        [[ $mode == *+listen ]] && echo "metrics: {listen: \"${events%.jsonl}.sock\"}"
        echo "policies:"
        echo "  bench:"
        if [[ ${mode%+listen} == pinned ]]; then
            echo "    mode: public_key"
            echo "    pins: [\"sha256/$root_pin\", \"sha256/$leaf_pin\"]"
        else
            echo "    mode: none"
        fi
        echo "    ca_file: $work/root.pem"
        echo "endpoints:"
        for ((i = 1; i <= n; i++)); do
            if [[ $kind == tls ]]; then
                echo "  - {name: e$i, url: \"tls://127.0.0.1:$https_port\", interval: ${INTERVAL}s, policy: bench}"
            elif [[ $kind == tcp ]]; then
                echo "  - {name: e$i, url: \"tcp://127.0.0.1:$https_port\", interval: ${INTERVAL}s}"
            else
                echo "  - {name: e$i, url: \"$base/e$i\", interval: ${INTERVAL}s, policy: bench}"
            fi
        done
    } > "$file"
}

# One scrape of the +listen run's socket; prints the body's size in bytes.
scrape() { curl -s --max-time 10 --unix-socket "$1" http://localhost/metrics | wc -c; }

# Runs pinpath (N MODE KIND [LABEL [RUN]]: LABEL an ENVS environment, RUN the row's name, by default MODE); prints
# "cpu_ms_per_probe cpu_pct rss_mib p99_ms probes failures startup_cpu_s steady_ms
# scrape_cpu_ms scrape_bytes max_threads new_threads" (scrape's two "nan 0" without +listen; new_threads: created
# in steady state, nan without perf).
run_pinpath() {
    local n=$1 mode=$2 kind=$3 label=${4:-plain} run=${5:-$2} words
    local name=$n-${run//\//-}-$kind
    local config=$work/agent-$name.yaml events=$work/events-$name.jsonl rss=$work/rss-pinpath-$name stderr=$work/pinpath-$name.stderr
    write_config "$n" "$mode" "$config" "$kind" "$events"
    "$PINPATH" check-config --config "$config" >/dev/null || die "pinpath rejects $config"
    : > "$rss"
    local started=$SECONDS
    read -ra words <<<"${env_assignments[$label]}"
    env "${words[@]}" "$PINPATH" run --config "$config" 2> "$stderr" & local pid=$!; pids+=("$pid")
    sample_rss "$pid" "$rss" & local sampler=$!; pids+=("$sampler")
    # Steady state starts when every endpoint has reported once (its first endpoint.state_changed).
    local first_pass_done=0 socket=${events%.jsonl}.sock next_scrape=$((SECONDS + 15))
    local max_threads=0 threads perf_pid='' newtask=$work/newtask-$name
    while ((SECONDS - started < DURATION)); do
        threads=$(awk '/^Threads:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
        if ((${threads:-0} > max_threads)); then max_threads=$threads; fi
        if [[ $mode == *+listen ]] && ((SECONDS >= next_scrape)); then
            scrape "$socket" >/dev/null; next_scrape=$((SECONDS + 15))
        fi
        kill -0 "$pid" 2>/dev/null || die "pinpath exited early (see $stderr)"
        if ((!first_pass_done)) && [[ -f $events ]] && (($(grep -c '"endpoint.state_changed"' "$events") >= n)); then
            first_pass_done=1
            cpu0=$(cpu_seconds "$pid"); t0=$(date +%s.%N)
            if command -v perf >/dev/null; then
                perf stat -e task:task_newtask -x, -o "$newtask" -p "$pid" 2>/dev/null & perf_pid=$!; pids+=("$perf_pid")
            fi
        fi
        sleep 0.5
    done
    # pinpath runs in this command substitution's subshell, holding its output open: stop it before dying,
    # or the caller waits for it forever. A probe that fails first reports only when its endpoint changes
    # state (after the failure threshold), so on a loaded machine a longer DURATION may be needed.
    if ((!first_pass_done)); then
        kill -TERM "$pid"; wait "$pid" || true
        die "pinpath: not every endpoint reported within ${DURATION}s (see $events)"
    fi
    local cpu1 t1 new_threads=nan
    cpu1=$(cpu_seconds "$pid"); t1=$(date +%s.%N)
    if [[ -n $perf_pid ]]; then
        kill -INT "$perf_pid"; wait "$perf_pid" || true; forget "$perf_pid"
        new_threads=$(awk -F, '/task:task_newtask/ { print $1 }' "$newtask")
    fi
    local scrape_ms=nan scrape_bytes=0
    if [[ $mode == *+listen ]]; then
        # Each scrape's CPU on NIO's thread; the median of SCRAPES (and the range, for the noise).
        local loop0 loop1 per_scrape=()
        for ((k = 0; k < SCRAPES; k++)); do
            loop0=$(loop_cpu_ns "$pid"); scrape_bytes=$(scrape "$socket"); loop1=$(loop_cpu_ns "$pid")
            per_scrape+=($((loop1 - loop0)))
        done
        scrape_ms=$(python3 -c 'import statistics, sys; v = [int(x) / 1e6 for x in sys.argv[1:]]; print(f"{statistics.median(v):.1f}/{min(v):.1f}-{max(v):.1f}")' "${per_scrape[@]}")
    fi
    kill -TERM "$pid"; wait "$pid" || true; forget "$pid"
    wait "$sampler" 2>/dev/null || true; forget "$sampler"
    python3 - "$events" "$cpu0" "$cpu1" "$t0" "$t1" "$(peak_mib "$rss")" "$n" "$INTERVAL" "$scrape_ms" "$scrape_bytes" \
        "$max_threads" "${new_threads:-nan}" <<'PY'
import json, sys
events, cpu0, cpu1, t0, t1, rss, n, interval = sys.argv[1], *map(float, sys.argv[2:6]), sys.argv[6], *map(float, sys.argv[7:9])
scrape_ms, scrape_bytes, max_threads, new_threads = sys.argv[9:13]
stop = [e for e in map(json.loads, open(events)) if e["event"] == "agent.stopping"]
if not stop: sys.exit("agent-scale: no agent.stopping event in " + events)
s = stop[-1]
late = s["schedule_lateness_ms"] or {}
print(f"{cpu1 / s['probes'] * 1000:.3f} {(cpu1 - cpu0) / (t1 - t0) * 100:.1f} {rss} {late.get('p99', 'nan')} "
      f"{s['probes']} {s['failures']} {cpu0:.2f} {(cpu1 - cpu0) / ((t1 - t0) * n / interval) * 1000:.3f} "
      f"{scrape_ms} {scrape_bytes} {max_threads} {new_threads}")
PY
}

# The libcurl floor: N/2 requests paced at N/60 per second; prints "cpu_ms_per_request rss_mib requests".
run_floor() {
    local n=$1 out
    out=$("$work/curl-floor" "$base/e1" "$(((n + 1) / 2))" 64 fresh "ca=$work/root.pem" ${2:+"$2"} "rate=$(calc "$n / $INTERVAL" 3)")
    python3 - "$out" <<'PY'
import sys
f = dict(kv.split("=") for kv in sys.argv[1].split())
print(f"{float(f['cpu_us_per_request']) / 1000:.3f} {f['rss_mib']} {f['requests']}")
PY
}

# OpenSSL's floor of a tls:// probe: N/2 handshakes with one SSL_CTX, paced at N/60 per second; prints
# "cpu_ms_per_handshake rss_mib handshakes".
run_openssl_floor() {
    local n=$1 out
    out=$("$work/openssl-floor" "$base/" "$(((n + 1) / 2))" "ca=$work/root.pem" handshake-only "rate=$(calc "$n / $INTERVAL" 3)")
    python3 - "$out" <<'PY'
import sys
f = dict(kv.split("=") for kv in sys.argv[1].split())
print(f"{float(f['cpu_us_per_request']) / 1000:.3f} {f['rss_mib']} {f['requests']}")
PY
}

# The request core's own request at the agent's pace; prints "cpu_ms_per_request rss_mib requests".
run_core() {
    local n=$1 out
    out=$("$BENCH" paced "$base/e1" "$(((n + 1) / 2))" "rate=$(calc "$n / $INTERVAL" 3)" fresh gate \
        "ca=$work/root.pem" "pin=sha256/$root_pin,sha256/$leaf_pin")
    python3 - "$out" <<'PY'
import sys
f = dict(kv.split("=") for kv in sys.argv[1].split())
print(f"{float(f['cpu_us_per_request']) / 1000:.3f} {f['rss_mib']} {f['requests']}")
PY
}

# The pinpath runs of each N and kind, in order: "run mode label" (run: the row's name), every mode under every
# environment, round after round.
runs=()
for ((round = 1; round <= ROUNDS; round++)); do
    for mode in $MODES; do
        for label in "${env_labels[@]}"; do
            run=$mode
            [[ $label == plain ]] || run+=@$label
            ((round == 1)) || run+=/$round
            runs+=("$run $mode $label")
        done
    done
done
echo "agent-scale: nproc=$(nproc), nginx on 127.0.0.1:$https_port, ${DURATION}s per run, N in ($NS), modes ($MODES), kinds ($KINDS)," \
    "environments (${env_labels[*]}), $ROUNDS round(s)" >&2
declare -A table
for n in $NS; do
    for kind in $KINDS; do
        for entry in "${runs[@]}"; do
            read -r run mode label <<<"$entry"
            echo "agent-scale: N=$n pinpath $kind ($run${ENVS:+: ${env_assignments[$label]:-plain}})…" >&2
            table[$n,$kind,pinpath,$run]=$(run_pinpath "$n" "$mode" "$kind" "$label" "$run")
            echo "  $n pinpath $kind $run: ${table[$n,$kind,pinpath,$run]} (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
        done
        if [[ $SKIP != *blackbox* ]]; then
            echo "agent-scale: N=$n blackbox_exporter $kind…" >&2
            table[$n,$kind,blackbox]=$(run_blackbox "$n" "$kind" "$INTERVAL")
            echo "  $n blackbox $kind: ${table[$n,$kind,blackbox]}" >&2
        fi
    done
    if [[ $SKIP != *core* && " $KINDS " == *" https "* ]]; then
        echo "agent-scale: N=$n request core…" >&2
        table[$n,core]=$(run_core "$n")
        echo "  $n request core: ${table[$n,core]}" >&2
    fi
    if [[ $SKIP != *openssl* && " $KINDS " == *" tls "* ]]; then
        echo "agent-scale: N=$n openssl floor (tls:// handshake, one SSL_CTX)…" >&2
        table[$n,openssl]=$(run_openssl_floor "$n")
        echo "  $n openssl floor: ${table[$n,openssl]}" >&2
    fi
    if [[ $SKIP != *floor* && " $KINDS " == *" https "* ]]; then
        echo "agent-scale: N=$n curl floor…" >&2
        table[$n,floor]=$(run_floor "$n")
        echo "  $n floor: ${table[$n,floor]}" >&2
        table[$n,cached]=$(run_floor "$n" cacache)
        echo "  $n floor with the CA cache: ${table[$n,cached]}" >&2
    fi
done

echo
row='%-6s %-5s %-18s %8s %8s %8s %8s %8s %8s %7s %6s %6s %7s %7s %8s %8s %6s %7s %6s %15s %5s %5s\n'
printf "$row" N kind policy "pp ms" "core ms" "bb ms" "curl ms" "c+ca ms" "ossl ms" "pp/core" "pp/bb" "pp/c" "pp/c+ca" "pp/ossl" \
    "pp RSS" "bb RSS" "pp CPU%" "p99 ms" "fail" "probes pp/bb" "thr" "new"
for n in $NS; do
    read -r core_ms _ _ <<<"${table[$n,core]:-nan nan 0}"
    read -r c_ms _ _ <<<"${table[$n,floor]:-nan nan 0}"
    read -r cc_ms _ _ <<<"${table[$n,cached]:-nan nan 0}"
    read -r os_ms _ _ <<<"${table[$n,openssl]:-nan nan 0}"
    for kind in $KINDS; do
        read -r bb_ms bb_rss bb_probes bb_ok <<<"${table[$n,$kind,blackbox]:-nan nan 0 0}"
        # Each floor is of its own kind: libcurl's and the core's of an https request, OpenSSL's of a tls:// handshake.
        kind_core=nan kind_c=nan kind_cc=nan kind_os=nan
        if [[ $kind == https ]]; then kind_core=$core_ms kind_c=$c_ms kind_cc=$cc_ms; fi
        if [[ $kind == tls ]]; then kind_os=$os_ms; fi
        for entry in "${runs[@]}"; do
            read -r run _ <<<"$entry"
            read -r pp_ms pp_pct pp_rss pp_p99 pp_probes pp_fail _ _ _ _ pp_threads pp_new <<<"${table[$n,$kind,pinpath,$run]}"
            printf "$row" "$n" "$kind" "$run" "$pp_ms" "$kind_core" "$bb_ms" "$kind_c" "$kind_cc" "$kind_os" \
                "$(calc "$pp_ms / $kind_core")" "$(calc "$pp_ms / $bb_ms")" "$(calc "$pp_ms / $kind_c")" \
                "$(calc "$pp_ms / $kind_cc")" "$(calc "$pp_ms / $kind_os")" "${pp_rss}M" "${bb_rss}M" "$pp_pct" "$pp_p99" \
                "$pp_fail" "$pp_probes/$bb_probes" "$pp_threads" "$pp_new"
        done
    done
    if [[ " $KINDS " == *" https "* && " $KINDS " == *" tls "* ]]; then
        for entry in "${runs[@]}"; do
            read -r run _ <<<"$entry"
            read -r tls_ms _ <<<"${table[$n,tls,pinpath,$run]}"
            read -r https_ms _ <<<"${table[$n,https,pinpath,$run]}"
            echo "N=$n $run: a pinpath tls:// probe costs $(calc "$tls_ms / $https_ms") of its https probe's CPU"
        done
    fi
done
echo
echo "pp = pinpath (all its CPU at SIGTERM over its probes, start-up and first pass included; CPU % from the end of its"
echo "first pass to SIGTERM),"
echo "bb = blackbox_exporter (its own CPU over the drive, the driver's not counted; kind tls: its tcp prober with tls: true);"
echo "core = the request core's own full-handshake request (pinpath-bench paced, in process, the agent's probe options) paced"
echo "at N/60/s (an https request; pp/core is meant for the https kind),"
echo "curl = curl-floor.c paced at N/60/s (an https request), c+ca = the same with libcurl's CA cache (CURLOPT_CAPATH cleared);"
echo "ossl = openssl-floor.c, a tls:// probe's floor: handshake only, one SSL_CTX, paced at N/60/s;"
echo "thr = the most threads pinpath had (sampled every 0.5 s); new = threads it created in steady state (perf);"
echo "ms = CPU ms per probe or request, M = MiB; RSS = peak VmRSS sampled each second; p99 = agent.stopping's"
echo "schedule_lateness_ms.p99 (ms)."
for n in $NS; do
    for kind in $KINDS; do
        read -r bb_ms _ bb_probes bb_ok <<<"${table[$n,$kind,blackbox]:-nan nan 0 0}"
        read -r core_ms _ _ <<<"${table[$n,core]:-nan nan 0}"
        read -r os_ms _ _ <<<"${table[$n,openssl]:-nan nan 0}"
        for entry in "${runs[@]}"; do
            read -r run mode _ <<<"$entry"
            read -r _ _ _ _ _ _ pp_startup pp_steady scrape_ms scrape_bytes _ <<<"${table[$n,$kind,pinpath,$run]}"
            echo "N=$n $kind $run: pinpath CPU until its first pass was done ${pp_startup}s; in steady state ${pp_steady} ms per probe"
            kind_core=nan; if [[ $kind == https ]]; then kind_core=$core_ms; fi
            kind_os=nan; if [[ $kind == tls ]]; then kind_os=$os_ms; fi
            echo "  (steady CPU over the scheduled N/$INTERVAL probes a second: $(calc "$pp_steady / $kind_core")× core,"
            echo "  $(calc "$pp_steady / $bb_ms")× bb, $(calc "$pp_steady / $kind_os")× ossl); blackbox probe_success 1 in $bb_ok of $bb_probes"
            if [[ $mode == *+listen ]]; then
                echo "  /metrics: ${scrape_ms%%/*} ms of CPU per scrape, median (${scrape_ms#*/} ms; NIO's thread, $SCRAPES scrapes of $scrape_bytes bytes, $n endpoints)"
            fi
        done
    done
done
