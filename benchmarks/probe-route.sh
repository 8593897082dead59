#!/usr/bin/env bash
# probe-route.sh: CPU per `/probe` of a pinned https target (issue 26), next to blackbox_exporter's `/probe` of the
# same target at the same rate, and the share of it the route itself takes (the scrape's overhead over the probe).
#
# One local nginx (lib/loopback-tls.sh: RSA 2048 root and leaf for 127.0.0.1, TLS 1.2 and 1.3, no session cache
# and no tickets, so every connection is a full handshake; its access log records each request's connection and
# whether its session was reused, and the script prints both: each probe must be a new connection, none reused).
# Each round, one after the other so that they do not share the CPU (2 cores), in alternating order:
#   pinpath   `pinpath run` with `metrics.listen` on a loopback port, no endpoints, and one module `https_2xx`
#             (public_key policy pinning root and leaf, `ca_file` the bench root, `targets: ["127.0.0.1/32"]`);
#   blackbox  Debian's prometheus-blackbox-exporter with its http module `https_2xx` (`tls_config.ca_file` the
#             bench root);
#   floor     benchmarks/curl-floor.c: libcurl and OpenSSL alone, the same number of full-handshake requests to the
#             same nginx at the same rate (a new connection each, CAINFO the bench root with libcurl's CA cache on,
#             no gate, no pins, no HTTP serving): what any libcurl 7.88 prober pays here, for pinpath's probe to be
#             read against;
# each driven by lib/probe-driver.py at RATE probes a second for DURATION seconds (`/probe?module=https_2xx&target=
# https://127.0.0.1:PORT/eI`, I = 1…RATE, one connection per request, as a Prometheus scrape), whose own CPU is
# not counted. Per process: its CPU (utime + stime of every thread, /proc/PID/stat) from just before the drive to
# its end, over the probes; start-up is not counted for either. The ratio pinpath / blackbox is the issue's goal
# (at most 0.75×); floor / blackbox says how far below blackbox_exporter libcurl and OpenSSL alone already are.
#
# The route's share: pinpath's listener runs on one NIO event loop thread of its own (`NIO-ELT-…`), which accepts
# the connection, decodes the HTTP request, parses the query (`ProbeQuery`), takes an in-flight slot, starts the
# probe's task, renders the answer (`TargetProbeExposition`) and writes it: the route's own work, and nothing
# else runs there. The probe (the module read with the target, the target's admission, the request core,
# libcurl, OpenSSL, the pins) runs on the task pool and the session's libcurl thread. So route = that thread's CPU
# (schedstat, ns), probe = the rest of the process's CPU, overhead = route / probe (goal at most 5%).
# With valgrind (CALLGRIND=1, the default when it is installed), the same split in instructions, which do not move
# with the machine's load: `pinpath run` under callgrind with one output per thread, CG_PROBES probes at 2 a
# second collected, the listener's thread found by its functions (NIO's SelectableEventLoop.run). In instructions
# the script also takes out of the probe what only a `/probe` probe does before it: reading the module again with
# the target (ModuleConfiguration.endpoint(forTarget:)) and the target's admission (TargetAdmission.decide),
# inclusive (the admission, an async function, without the probe's task that its last part resumes), and prints
# the overhead with and without them; then the listener thread's pinpath and HTTP functions.
# The CPU-time share is larger than the instructions' share: the listener's CPU also holds the kernel's work for
# the scrape's connection (accept, read, write, close, epoll) and a thread woken several times a probe.
#
# It measures and prints; it asserts nothing (a round whose probes did not all succeed, or whose connections were
# reused, says so: its figures measure something else).
#
# Environment:
#   PINPATH    the release binary (required):
#              swift build -c release --product pinpath --static-swift-stdlib
#              PINPATH=$PWD/.build/release/pinpath benchmarks/probe-route.sh
#   RATE       probes a second (default 20)
#   DURATION   seconds each exporter is driven per round (default 60)
#   ROUNDS     rounds (default 3); each row of the summary is the median over them
#   CALLGRIND  1 to count instructions (default 1 when valgrind is installed), 0 not to
#   CG_PROBES  probes collected under callgrind (default 40)
#   CG_FUNCTIONS  how many of the listener thread's functions to list (default 30)
#   KEEP       1 to keep the work directory; its path is printed
#
# Needs root only for apt-get (nginx-light and prometheus-blackbox-exporter are installed when missing), plus
# openssl, python3, curl, and valgrind for instructions. Loopback only.
set -euo pipefail

PINPATH=${PINPATH:?set PINPATH to a release pinpath binary (see the header)}
RATE=${RATE:-20}
DURATION=${DURATION:-60}
ROUNDS=${ROUNDS:-3}
CG_PROBES=${CG_PROBES:-40}
if command -v valgrind >/dev/null; then CALLGRIND=${CALLGRIND:-1}; else CALLGRIND=0; fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=probe-route
source "$here/lib/loopback-tls.sh"
[[ -x $PINPATH ]] || die "no executable at PINPATH=$PINPATH"
for v in RATE DURATION ROUNDS CG_PROBES; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer (got '${!v}')"; done

install_missing
start_tls_nginx log
cc -O2 -o "$work/curl-floor" "$here/curl-floor.c" $(pkg-config --cflags --libs libcurl)

listen_port=$(port)
cat > "$work/pinpath.yaml" <<YAML
events: {output: $work/events.jsonl}
metrics: {listen: "127.0.0.1:$listen_port"}
policies:
  bench:
    mode: public_key
    pins: ["sha256/$root_pin", "sha256/$leaf_pin"]
    ca_file: $work/root.pem
modules:
  https_2xx:
    policy: bench
    targets: ["127.0.0.1/32"]
YAML
"$PINPATH" check-config --config "$work/pinpath.yaml" >/dev/null || die "pinpath rejects $work/pinpath.yaml"
query="module=https_2xx&target=$base/e{i}"

# Checks what nginx saw for a run of `probes` probes: every request on a connection of its own, no session reused.
check_handshakes() {
    local who=$1 probes=$2 requests connections reused
    read -r requests connections reused <<<"$(handshakes_seen)"
    echo "  $who: nginx saw $requests requests on $connections connections, $reused sessions reused" >&2
    if ((requests != probes || connections != probes || reused != 0)); then
        echo "$bench: warning: $who's probes were not each a fresh full handshake" >&2
    fi
}

# One pinpath run driven at RATE; prints "cpu_ms_per_probe route_ms_per_probe probes successes".
run_pinpath() {
    "$PINPATH" run --config "$work/pinpath.yaml" 2> "$work/pinpath.stderr" & local pid=$!; pids+=("$pid")
    wait_port "$listen_port"
    local cpu0 loop0 cpu1 loop1 result
    cpu0=$(cpu_seconds "$pid"); loop0=$(loop_cpu_ns "$pid")
    result=$(drive_probes "$listen_port" "$query" "$RATE" 1 "$DURATION")
    cpu1=$(cpu_seconds "$pid"); loop1=$(loop_cpu_ns "$pid")
    ((loop0 > 0)) || die "pinpath has no NIO-ELT thread: cannot tell the route's CPU"
    kill -TERM "$pid"; wait "$pid" || true; forget "$pid"
    local probes successes
    read -r probes successes <<<"$result"
    ((successes == probes)) || echo "$bench: warning: pinpath: probe_success 1 in $successes of $probes (see $work/pinpath.stderr)" >&2
    echo "$(calc "($cpu1 - $cpu0) / $probes * 1000" 3) $(calc "($loop1 - $loop0) / 1e6 / $probes" 4) $probes $successes"
}

# The floor at RATE for DURATION; prints "cpu_ms_per_request requests" (its own getrusage from after its warm-up
# request, which nginx also logs, to its end).
run_floor() {
    local out
    out=$("$work/curl-floor" "$base/e1" "$((RATE * DURATION))" 64 fresh "ca=$work/root.pem" cacache "rate=$RATE")
    python3 - "$out" <<'PY'
import sys
f = dict(kv.split("=") for kv in sys.argv[1].split())
print(f"{float(f['cpu_us_per_request']) / 1000:.3f} {f['requests']}")
PY
}

echo "$bench: nproc=$(nproc), load $(cut -d' ' -f1-3 /proc/loadavg), nginx on 127.0.0.1:$https_port, $RATE probes/s for ${DURATION}s, $ROUNDS rounds" >&2
rounds=()
for ((r = 1; r <= ROUNDS; r++)); do
    load0=$(cut -d' ' -f1 /proc/loadavg)
    order=(pinpath blackbox floor)
    ((r % 2 == 0)) && order=(floor blackbox pinpath)
    for who in "${order[@]}"; do
        echo "$bench: round $r, $who…" >&2
        : > "$work/access.log"
        if [[ $who == pinpath ]]; then
            read -r pp_ms route_ms pp_probes pp_ok <<<"$(run_pinpath)"
            check_handshakes pinpath "$pp_probes"
        elif [[ $who == floor ]]; then
            read -r fl_ms fl_requests <<<"$(run_floor)"
            check_handshakes floor "$((fl_requests + 1))"  # and its warm-up request
        else
            read -r bb_ms _ bb_probes bb_ok <<<"$(run_blackbox "$RATE" https 1)"
            ((bb_ok == bb_probes)) || echo "$bench: warning: blackbox: probe_success 1 in $bb_ok of $bb_probes" >&2
            check_handshakes blackbox "$bb_probes"
        fi
    done
    load1=$(cut -d' ' -f1 /proc/loadavg)
    rounds+=("$r $pp_ms $bb_ms $route_ms $fl_ms $pp_probes/$pp_ok $bb_probes/$bb_ok $load0 $load1")
    echo "  round $r: pinpath $pp_ms ms, blackbox $bb_ms ms, route $route_ms ms, floor $fl_ms ms per probe" >&2
done

echo
python3 - "${rounds[@]}" <<'PY'
import statistics, sys
rows = [line.split() for line in sys.argv[1:]]
row = "{:<7} {:>9} {:>9} {:>6} {:>9} {:>9} {:>9} {:>9} {:>8} {:>13} {:>13} {:>11}"
print(row.format("round", "pp ms", "bb ms", "pp/bb", "route ms", "probe ms", "overhead", "floor ms", "floor/bb",
                 "pp probes/ok", "bb probes/ok", "load"))
ratios, overheads, floors, columns = [], [], [], {k: [] for k in ("pp", "bb", "route", "probe", "floor")}
for r, pp, bb, route, floor, pp_n, bb_n, load0, load1 in rows:
    pp, bb, route, floor = float(pp), float(bb), float(route), float(floor)
    probe = pp - route
    ratios.append(pp / bb); overheads.append(route / probe * 100); floors.append(floor / bb)
    for k, v in zip(columns, (pp, bb, route, probe, floor)): columns[k].append(v)
    print(row.format(r, f"{pp:.3f}", f"{bb:.3f}", f"{pp / bb:.2f}", f"{route:.4f}", f"{probe:.3f}",
                     f"{route / probe * 100:.2f}%", f"{floor:.3f}", f"{floor / bb:.2f}", pp_n, bb_n, f"{load0}→{load1}"))
m = {k: statistics.median(v) for k, v in columns.items()}
print(row.format("median", f"{m['pp']:.3f}", f"{m['bb']:.3f}", f"{statistics.median(ratios):.2f}", f"{m['route']:.4f}",
                 f"{m['probe']:.3f}", f"{statistics.median(overheads):.2f}%", f"{m['floor']:.3f}",
                 f"{statistics.median(floors):.2f}", "", "", ""))
print()
print("pp = pinpath's /probe, bb = blackbox_exporter's /probe: each process's CPU ms per probe over the drive (all threads);")
print("route = pinpath's listener thread (NIO-ELT: HTTP, query, slot, exposition, write), probe = pp - route;")
print("overhead = route / probe; floor = curl-floor.c's CPU ms per request (libcurl and OpenSSL alone, same rate);")
print("the median row takes each column's median, the ratios and overhead the medians of the rounds'.")
print(f"probe-route: pp_bb={statistics.median(ratios):.3f} overhead_pct={statistics.median(overheads):.2f} "
      f"pp_ms={m['pp']:.3f} bb_ms={m['bb']:.3f} floor_ms={m['floor']:.3f} floor_bb={statistics.median(floors):.3f}")
PY

[[ $CALLGRIND == 1 ]] || exit 0

# Instructions, per thread. valgrind 3.19 cannot read the DWARF 5 debug information Swift writes: the binary is
# copied with `strip -g` (symbols kept). Instrumentation starts after the listener is up and a first probe has
# loaded the trust store, and stops before SIGTERM.
echo "$bench: callgrind, $CG_PROBES probes at 2 a second…" >&2
strip -g -o "$work/pinpath-stripped" "$PINPATH"
valgrind --tool=callgrind --separate-threads=yes --instr-atstart=no --callgrind-out-file="$work/callgrind.out" \
    "$work/pinpath-stripped" run --config "$work/pinpath.yaml" 2> "$work/callgrind.stderr" & cg_pid=$!; pids+=("$cg_pid")
for _ in $(seq 600); do (exec 3<>"/dev/tcp/127.0.0.1/$listen_port") 2>/dev/null && break; sleep 0.1; done
read -r _ warm <<<"$(drive_probes "$listen_port" "$query" 1 1 1)"
((warm == 1)) || die "the warm-up probe under valgrind failed (see $work/callgrind.stderr)"
callgrind_control -i on "$cg_pid" >/dev/null
read -r cg_n cg_ok <<<"$(drive_probes "$listen_port" "$query" 2 1 "$((CG_PROBES / 2))")"
callgrind_control -i off "$cg_pid" >/dev/null
kill -TERM "$cg_pid"; wait "$cg_pid" || true; forget "$cg_pid"
((cg_ok == cg_n)) || echo "$bench: warning: under callgrind, probe_success 1 in $cg_ok of $cg_n" >&2

# Each thread's total, and the file of the listener's thread (the one that ran NIO's SelectableEventLoop.run).
total=0 route=0 route_file=
for file in "$work"/callgrind.out-*; do
    ir=$(awk '/^totals:/ { print $2 }' "$file"); total=$((total + ${ir:-0}))
    if grep -q '^fn=.*SelectableEventLoopC3run' "$file"; then route=${ir:-0}; route_file=$file; fi
done
[[ -n $route_file ]] || die "no thread of the callgrind run ran NIO's event loop"
# Inclusive instructions of the functions matching $1 (demangled, a grep -E pattern), over every thread but the
# listener's; of an async function's partial functions (one name, nested), the largest.
inclusive() {
    local file
    for file in "$work"/callgrind.out-*; do
        [[ $file == "$route_file" ]] && continue
        callgrind_annotate --inclusive=yes --threshold=100 "$file" 2>/dev/null | awk '/^ *[0-9,]+ \([0-9.]+%\) / {
            ir = $1; gsub(",", "", ir); name = $0
            sub(/^ *[0-9,]+ \([0-9.]+%\) +/, "", name); sub(/ \[[^]]*\]$/, "", name); sub(/^[^ :]*:/, "", name)
            print ir, name }' | swift demangle --simplified | { grep -E "$1" || true; } | awk '
            { name = $0; sub(/^[0-9]+ /, "", name); if ($1 > best[name]) best[name] = $1 }
            END { for (n in best) sum += best[n]; print sum + 0 }'
    done | awk '{ sum += $1 } END { print sum + 0 }'
}
# An async function's own instructions, over every thread but the listener's: each of its partial functions'
# inclusive count less what it calls of `$2` (a grep -E pattern: the task switch to its next partial function,
# counted in that one's own block, and the caller's continuation, which a returning async function runs inline:
# the admission's last partial function holds the rest of the probe's task, EndpointProbe and the session).
own_async() {
    local file
    for file in "$work"/callgrind.out-*; do
        [[ $file == "$route_file" ]] && continue
        callgrind_annotate --inclusive=yes --tree=calling --threshold=100 "$file" 2>/dev/null | swift demangle --simplified |
            awk -v fn="$1" -v skip="$2" '
            function ir(line,  n) { n = line; sub(/^ *>? */, "", n); sub(/ .*/, "", n); gsub(",", "", n); return n + 0 }
            /^ *[0-9,]+ \([0-9.]+%\)  \*  / { block = index($0, ":" fn " [") > 0; if (block) sum += ir($0); next }
            /^$/ { block = 0; next }
            block && /^ *[0-9,]+ \([0-9.]+%\)  >   / {
                name = $0; sub(/^.*>   [^:]*:/, "", name); sub(/ \([0-9]+x\).*$/, "", name)
                if (name ~ skip) sum -= ir($0)
            }
            END { print sum + 0 }'
    done | awk '{ sum += $1 } END { print sum + 0 }'
}
reading=$(inclusive ' ModuleConfiguration\.endpoint\(forTarget:\)$')
admission=$(own_async 'TargetAdmission.decide(_:timeout:)' '^(swift_task_switch|TargetProbe\.run\(_:\))')
probe=$((total - route - reading - admission))
echo
echo "instructions per /probe ($cg_n probes, $cg_ok with probe_success 1): all $(calc "$total / $cg_n / 1e6" 3) M"
echo "  route, the listener's thread (HTTP, query, slot, exposition, write): $(calc "$route / $cg_n / 1e3" 1) k"
echo "  the module read with the target (ModuleConfiguration.endpoint(forTarget:)): $(calc "$reading / $cg_n / 1e3" 1) k"
echo "  the target's admission (TargetAdmission.decide): $(calc "$admission / $cg_n / 1e3" 1) k"
echo "  the probe (the rest: EndpointProbe, the session, libcurl, OpenSSL, the pins): $(calc "$probe / $cg_n / 1e6" 3) M"
echo "  overhead over the probe: the listener's thread $(calc "$route / $probe * 100" 2)%;" \
    "with the module's reading and the admission $(calc "($route + $reading + $admission) / $probe * 100" 2)%"
echo "the listener thread's functions of pinpath and NIO's HTTP, inclusive, per probe (k instructions; names cut at 120):"
callgrind_annotate --inclusive=yes --threshold=100 "$route_file" 2>/dev/null | awk -v n="$cg_n" '
    /^ *[0-9,]+ \([0-9.]+%\) / {
        ir = $1; gsub(",", "", ir); name = $0
        sub(/^ *[0-9,]+ \([0-9.]+%\) +/, "", name); sub(/ \[[^]]*\]$/, "", name); sub(/^[^ :]*:/, "", name)
        printf "%.1f %s\n", ir / n / 1000, name
    }' | swift demangle --simplified | grep -E 'PinpathAgent|NIOHTTP1|HTTPDecoder|HTTPResponseEncoder|ProbeQuery|Exposition' |
    head -"${CG_FUNCTIONS:-30}" | awk '{ n = $1; $1 = ""; printf "  %10s %s\n", n, substr($0, 2, 120) }'
echo "probe-route: callgrind_all_m=$(calc "$total / $cg_n / 1e6" 3) callgrind_route_k=$(calc "$route / $cg_n / 1e3" 1)" \
    "callgrind_overhead_pct=$(calc "$route / $probe * 100" 2) callgrind_overhead_with_admission_pct=$(calc "($route + $reading + $admission) / $probe * 100" 2)"
