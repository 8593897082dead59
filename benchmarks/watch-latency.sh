#!/usr/bin/env bash
# watch-latency.sh: how quickly and how cheaply `pinpath watch` reports carrier changes, next to `ip -ts monitor`.
#
# Flaps a veth link FLAPS times (FLAPS downs + FLAPS ups) and, for each change, compares the time pinpath
# wrote its event line with the time `ip -ts monitor` saw the same kernel event. The namespace has policy
# routing: TABLES extra routing tables (IPv4 and IPv6 routes through the flapped link in each, and a
# `from`, an `fwmark` and an `iif` rule per table), with the default route in the first one behind a
# wg-quick-style rule pair (`not fwmark … table T`, `table main suppress_prefixlength 0`). `ip monitor`
# listens to the groups pinpath listens to (link, address, route, rule), so both read the same messages.
# Prints p50/p99/max of the difference, pinpath's CPU per event against ip monitor's CPU per line (same
# run), and pinpath's RSS after 1,000 changes and at the end. It measures and prints; it asserts no time
# (issue 17's goals: CPU per event at most 1.5× ip monitor's per line, RSS under 15 MiB after 1,000
# changes and no growth up to 10,000, which is FLAPS=5000).
#
# Needs root (network namespaces), iproute2 and python3.
#
# Environment:
#   PINPATH   the binary (default .build/release/pinpath in the package; built with
#             `swift build -c release --product pinpath --static-swift-stdlib` when that default is missing)
#   FLAPS     down/up cycles (default 200, so 400 changes; 5000 for the issue's 10,000 changes)
#   TABLES    extra routing tables with their rules (default 3; 0 for a plain default route in main)
#   PAUSE     seconds to wait after each down or up step (default 0.025)
#   SETTLE    seconds to wait after the last step before sampling CPU and RSS (default 0.5)
#   KEEP      1 to keep the raw outputs (their directory is printed)
#
# The last line is machine-readable:
#   watch-latency: changes=N matched=M p50_ms=… p99_ms=… max_ms=… cpu_us_per_event=… ip_cpu_us_per_line=…
#                  cpu_ratio=… rss_1000_mib=… rss_mib=… hwm_mib=…
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FLAPS=${FLAPS:-200}
TABLES=${TABLES:-3}
PAUSE=${PAUSE:-0.025}
SETTLE=${SETTLE:-0.5}
KEEP=${KEEP:-0}

die() { echo "watch-latency: $*" >&2; exit 1; }

[[ $FLAPS =~ ^[1-9][0-9]*$ ]] || die "FLAPS must be a positive integer (got '$FLAPS')"
[[ $TABLES =~ ^[0-9]$ ]] || die "TABLES must be a number of tables from 0 to 9 (got '$TABLES')"
[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces and veth links)"
command -v ip >/dev/null || die "needs iproute2 (ip)"
command -v python3 >/dev/null || die "needs python3"

if [[ -z ${PINPATH:-} ]]; then
    PINPATH=$ROOT/.build/release/pinpath
    if [[ ! -x $PINPATH ]]; then
        echo "building pinpath (swift build -c release --product pinpath --static-swift-stdlib)…" >&2
        (cd "$ROOT" && swift build -c release --product pinpath --static-swift-stdlib) >&2
    fi
fi
[[ -x $PINPATH ]] || die "no pinpath binary at $PINPATH"

NS_A=ppbench-$$-a
NS_B=ppbench-$$-b
WORK=$(mktemp -d /tmp/watch-latency.XXXXXX)
MONITOR_OUT=$WORK/ip-monitor.txt
WATCH_OUT=$WORK/watch.jsonl
WATCH_ERR=$WORK/watch.stderr
MONITOR_PID=
WATCH_PID=

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    for pid in $WATCH_PID $MONITOR_PID; do
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    ip netns del "$NS_A" 2>/dev/null || true
    ip netns del "$NS_B" 2>/dev/null || true
    if [[ $KEEP == 1 || $status -ne 0 ]]; then
        echo "raw outputs kept in $WORK" >&2
    else
        rm -rf "$WORK"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- Namespaces: pa0 in A (default route through it), its peer pb0 in B. ---
ip netns add "$NS_A"
ip netns add "$NS_B"
ip -n "$NS_A" link set lo up
ip -n "$NS_A" link add pa0 type veth peer name pb0
ip -n "$NS_A" link set pb0 netns "$NS_B"
ip -n "$NS_A" addr add 10.77.0.1/24 dev pa0
ip -n "$NS_B" addr add 10.77.0.254/24 dev pb0
ip -n "$NS_A" -6 addr add 2001:db8:77::1/64 dev pa0 nodad
ip -n "$NS_B" -6 addr add 2001:db8:77::fe/64 dev pb0 nodad
ip -n "$NS_A" link set pa0 up
ip -n "$NS_B" link set pb0 up
if [[ $TABLES == 0 ]]; then
    ip -n "$NS_A" route add default via 10.77.0.254
else
    # Policy routing as a VPN client and a multi-homed host set it up: tables 101…, each with routes of
    # both families and three rules; the default route lives in table 101 behind wg-quick's rule pair.
    for t in $(seq 1 "$TABLES"); do
        table=$((100 + t))
        for n in 1 2 3 4; do
            ip -n "$NS_A" route add "10.$((80 + t)).$n.0/24" via 10.77.0.254 table "$table"
            ip -n "$NS_A" -6 route add "2001:db8:$((80 + t)):$n::/64" via 2001:db8:77::fe table "$table"
        done
        ip -n "$NS_A" rule add from "10.77.$t.0/24" table "$table" priority $((1000 + t))
        ip -n "$NS_A" rule add fwmark "$t" table "$table" priority $((1100 + t))
        ip -n "$NS_A" rule add iif lo to "10.$((80 + t)).0.0/16" table "$table" priority $((1200 + t))
        ip -n "$NS_A" -6 rule add from "2001:db8:77:$t::/64" table "$table" priority $((1000 + t))
    done
    ip -n "$NS_A" route add default via 10.77.0.254 table 101
    ip -n "$NS_A" -6 route add default via 2001:db8:77::fe table 101
    ip -n "$NS_A" rule add not fwmark 0xca6c table 101 priority 32000
    ip -n "$NS_A" rule add table main suppress_prefixlength 0 priority 31999
    ip -n "$NS_A" -6 rule add not fwmark 0xca6c table 101 priority 32000
    ip -n "$NS_A" -6 rule add table main suppress_prefixlength 0 priority 31999
fi

# --- The two observers. ---
# `ip -ts` prints local time; TZ=UTC makes it comparable with pinpath's UTC stamps. `-o`: one line per message.
TZ=UTC ip -n "$NS_A" -ts -o monitor link address route rule >"$MONITOR_OUT" 2>&1 &
MONITOR_PID=$!
"$PINPATH" watch --json --netns "$NS_A" >"$WATCH_OUT" 2>"$WATCH_ERR" &
WATCH_PID=$!

# ip monitor says nothing when it is ready: change lo's MTU until it reports one of the changes.
monitor_ready=0
for i in $(seq 1 100); do
    mtu=$((65536 - i))
    ip -n "$NS_A" link set lo mtu "$mtu"
    sleep 0.05
    if grep -q "lo: .* mtu $mtu " "$MONITOR_OUT"; then monitor_ready=1; break; fi
    kill -0 "$MONITOR_PID" 2>/dev/null || break
done
[[ $monitor_ready == 1 ]] || die "ip monitor did not start: $(head -c 500 "$MONITOR_OUT")"
ip -n "$NS_A" link set lo mtu 65536

watch_ready=0
for _ in $(seq 1 200); do
    if grep -q '"reason":"initial"' "$WATCH_OUT"; then watch_ready=1; break; fi
    kill -0 "$WATCH_PID" 2>/dev/null || break
    sleep 0.05
done
[[ $watch_ready == 1 ]] || die "pinpath watch printed no initial line: $(head -c 500 "$WATCH_ERR")"
grep -q '"status":"reachable"' <(head -n 1 "$WATCH_OUT") ||
    echo "warning: pinpath does not start out reachable: $(head -n 1 "$WATCH_OUT")" >&2
sleep 0.2 # let the MTU probes reach pinpath before the CPU sample

# CPU time of every thread of a process, in ns (first field of schedstat), and the thread ids.
cpu_ns() {
    local total=0 tids=() f v
    for f in /proc/"$1"/task/*/schedstat; do
        read -r v _ <"$f" 2>/dev/null || continue
        total=$((total + v))
        f=${f%/schedstat}
        tids+=("${f##*/}")
    done
    echo "$total ${tids[*]}"
}

# --- Flap pa0's carrier by taking its peer down and up. ---
read -r cpu_before tids_before < <(cpu_ns "$WATCH_PID")
read -r monitor_cpu_before _ < <(cpu_ns "$MONITOR_PID")
lines_before=$(wc -l <"$WATCH_OUT")
monitor_lines_before=$(wc -l <"$MONITOR_OUT")
rss_1000_kb=0
flap_start=$(date +%s.%N)
for flap in $(seq 1 "$FLAPS"); do
    ip -n "$NS_B" link set pb0 down
    sleep "$PAUSE"
    ip -n "$NS_B" link set pb0 up
    sleep "$PAUSE"
    if ((flap == 500)); then
        # 1,000 changes: the issue's first RSS point (the one after the last change is the second).
        rss_1000_kb=$(awk '/^VmRSS:/ { print $2 }' /proc/"$WATCH_PID"/status)
    fi
done
flap_end=$(date +%s.%N)
sleep "$SETTLE"
kill -0 "$WATCH_PID" 2>/dev/null || die "pinpath watch exited during the flapping: $(tail -c 500 "$WATCH_ERR")"
kill -0 "$MONITOR_PID" 2>/dev/null || die "ip monitor exited during the flapping"
read -r cpu_after tids_after < <(cpu_ns "$WATCH_PID")
read -r monitor_cpu_after _ < <(cpu_ns "$MONITOR_PID")
lines_after=$(wc -l <"$WATCH_OUT")
monitor_lines_after=$(wc -l <"$MONITOR_OUT")
rss_kb=$(awk '/^VmRSS:/ { print $2 }' /proc/"$WATCH_PID"/status)
hwm_kb=$(awk '/^VmHWM:/ { print $2 }' /proc/"$WATCH_PID"/status)
threads=$(awk '/^Threads:/ { print $2 }' /proc/"$WATCH_PID"/status)

# Threads that ended in between took their CPU time with them; say so rather than hide it.
gone=$(comm -23 <(tr ' ' '\n' <<<"$tids_before" | sort) <(tr ' ' '\n' <<<"$tids_after" | sort) | tr '\n' ' ')

# --- Stop both observers. ---
kill -INT "$WATCH_PID"
watch_status=0
wait "$WATCH_PID" || watch_status=$?
WATCH_PID=
kill -TERM "$MONITOR_PID" 2>/dev/null || true
wait "$MONITOR_PID" 2>/dev/null || true
MONITOR_PID=

# --- Match and report. ---
python3 - "$MONITOR_OUT" "$WATCH_OUT" <<EOF
import json, re, sys, calendar, math, time

flaps = $FLAPS
lines_before, lines_after = $lines_before, $lines_after
cpu_before, cpu_after = $cpu_before, $cpu_after
monitor_cpu_us = ($monitor_cpu_after - $monitor_cpu_before) / 1000
monitor_lines = $monitor_lines_after - $monitor_lines_before
rss_kb, hwm_kb, threads, rss_1000_kb = ${rss_kb:-0}, ${hwm_kb:-0}, ${threads:-0}, ${rss_1000_kb:-0}
tables = $TABLES
gone_threads = "$gone".split()
watch_status = $watch_status
flap_seconds = $flap_end - $flap_start
monitor_path, watch_path = sys.argv[1], sys.argv[2]

STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{6})")

def micros(text):
    """RFC 3339-ish UTC time -> integer microseconds since the epoch."""
    m = STAMP.search(text)
    y, mo, d, h, mi, s, us = map(int, m.groups())
    return calendar.timegm((y, mo, d, h, mi, s)) * 1_000_000 + us

# ip monitor: "[2026-11-22T22:06:48.197000] 3: pa0@if2: <NO-CARRIER,BROADCAST,...> mtu ... state DOWN ..."
# A transition is the first pa0 line whose carrier differs from the state after the previous transition;
# repeated lines for the same state (other attributes changing) are ignored.
LINK = re.compile(r"^\[([^\]]+)\]\s+(?:Deleted\s+)?\d+:\s+pa0(?:@\S+)?:\s+<([^>]*)>")
ip_transitions = {"down": [], "up": []}
ip_order = []
carrier = True  # pa0 and pb0 are both up before the flapping starts
ip_pa0_lines = 0
with open(monitor_path) as f:
    for line in f:
        m = LINK.match(line)
        if not m:
            continue
        ip_pa0_lines += 1
        flags = m.group(2).split(",")
        up = "LOWER_UP" in flags and "NO-CARRIER" not in flags
        if up != carrier:
            carrier = up
            direction = "up" if up else "down"
            t = micros(m.group(1))
            ip_transitions[direction].append(t)
            ip_order.append((t, direction))

events = []
with open(watch_path) as f:
    for number, line in enumerate(f, 1):
        line = line.strip()
        if not line:
            continue
        try:
            events.append((number, json.loads(line)))
        except ValueError:
            print(f"  unparsable pinpath line {number}: {line[:200]}")

# Sanity of pinpath's own stream: seq without gaps, each previous_status the last status.
problems = []
last_seq, last_status = 0, None
for number, e in events:
    if e.get("seq") != last_seq + 1:
        problems.append(f"seq {e.get('seq')} after {last_seq} (line {number})")
    last_seq = e.get("seq", last_seq)
    if e.get("event") == "reachability.changed":
        if last_status is not None and e.get("previous_status") != last_status:
            problems.append(f"seq {e.get('seq')}: previous_status {e.get('previous_status')} but last status was {last_status}")
        if last_status is not None and e.get("status") == e.get("previous_status"):
            problems.append(f"seq {e.get('seq')}: status unchanged ({e.get('status')}), reason {e.get('reason')}")
        last_status = e.get("status")

during = [(number, e) for number, e in events if lines_before < number <= lines_after]
pp = {"down": [], "up": []}
unmatched = []
for number, e in during:
    reason = e.get("reason")
    if e.get("event") == "reachability.changed" and reason == "carrier_lost":
        pp["down"].append((micros(e["time"]), e))
    elif e.get("event") == "reachability.changed" and reason == "carrier_gained":
        pp["up"].append((micros(e["time"]), e))
    else:
        unmatched.append(e)

# Pair the k-th pinpath change with the k-th ip monitor transition of the same direction. So that one
# missed or duplicated line does not shift every later pair, this is done as an order-preserving alignment
# of the two sequences (same direction only) with the smallest cost: a pair costs its time difference,
# leaving a line or a transition unpaired costs 50 ms. When nothing is missing this is exactly the k-th
# with the k-th; a pinpath line more than 100 ms away from its transition shows up as a miss plus an
# unmatched line rather than as a latency.
expected = 2 * flaps
pp_seq = sorted([(t, "down", e) for t, e in pp["down"]] + [(t, "up", e) for t, e in pp["up"]],
                key=lambda x: x[2].get("seq", 0))
ip_seq = ip_order
SKIP = 50_000  # µs
# Only alignments within BAND lines of the diagonal are searched: cost and memory grow with n × BAND, not
# n × m (10,000 changes). The band is wide enough for the difference in counts (pinpath reports nothing
# for a down and up that the kernel sent before it read either) and 64 lines of slack either way.
n, m = len(pp_seq), len(ip_seq)
BAND = abs(n - m) + 64
INF = float("inf")
width = 2 * BAND + 1
cost = [[INF] * width for _ in range(n + 1)]  # cost[i][j - i + BAND]
step = [bytearray(width) for _ in range(n + 1)]  # 1 match, 2 skip pinpath, 3 skip ip monitor
cost[0][BAND] = 0
for i in range(n + 1):
    row, prev = cost[i], cost[i - 1] if i else None
    for j in range(max(0, i - BAND), min(m, i + BAND) + 1):
        if i == 0 and j == 0:
            continue
        k = j - i + BAND
        best, how = INF, 0
        if i and j and pp_seq[i - 1][1] == ip_seq[j - 1][1]:
            c = prev[k] + abs(pp_seq[i - 1][0] - ip_seq[j - 1][0])  # (i-1, j-1): same diagonal offset
            if c < best:
                best, how = c, 1
        if i and k + 1 < width and prev[k + 1] + SKIP < best:  # (i-1, j)
            best, how = prev[k + 1] + SKIP, 2
        if j and k > 0 and row[k - 1] + SKIP < best:  # (i, j-1)
            best, how = row[k - 1] + SKIP, 3
        row[k], step[i][k] = best, how
pairs, missed_by_pinpath = [], []
i, j = n, m
while i or j:
    how = step[i][j - i + BAND]
    if how == 1:
        t, d, e = pp_seq[i - 1]
        pairs.append((d, t - ip_seq[j - 1][0], e))
        i, j = i - 1, j - 1
    elif how == 2:
        unmatched.append(pp_seq[i - 1][2])
        i -= 1
    else:
        missed_by_pinpath.append(ip_seq[j - 1])
        j -= 1
pairs.reverse()
missed_by_pinpath.reverse()
unmatched.sort(key=lambda e: e.get("seq", 0))

diffs = sorted(p[1] / 1000 for p in pairs)

def pct(values, p):
    """Nearest-rank percentile."""
    if not values:
        return float("nan")
    return values[max(0, math.ceil(p / 100 * len(values)) - 1)]

n_events = len(during)
cpu_us = (cpu_after - cpu_before) / 1000
cpu_per_event = cpu_us / n_events if n_events else float("nan")
ip_changes = len(ip_transitions["down"]) + len(ip_transitions["up"])
p50, p99, mx = pct(diffs, 50), pct(diffs, 99), (diffs[-1] if diffs else float("nan"))

scenario = f"{tables} extra routing tables with policy rules" if tables else "a default route in the main table"
print(f"pinpath watch latency vs ip -ts monitor, {flaps} flaps ({expected} carrier changes) in {flap_seconds:.1f} s, {scenario}")
print(f"  ip monitor: {ip_changes} carrier transitions (down {len(ip_transitions['down'])}, up {len(ip_transitions['up'])}) from {ip_pa0_lines} pa0 lines")
print(f"  pinpath:    {n_events} events during the flapping (carrier_lost {len(pp['down'])}, carrier_gained {len(pp['up'])}, other {n_events - len(pp['down']) - len(pp['up'])})")
print(f"  matched:    {len(pairs)} of {expected}")
if diffs:
    print(f"  pinpath - ip monitor: min {diffs[0]:.3f} ms, p50 {p50:.3f} ms, p99 {p99:.3f} ms, max {mx:.3f} ms"
          f"  (goal: p99 within 5 ms)")
    for d in ("down", "up"):
        ds = sorted(x / 1000 for dd, x, _ in pairs if dd == d)
        if ds:
            print(f"    {d:4}: p50 {pct(ds, 50):.3f} ms, p99 {pct(ds, 99):.3f} ms, max {ds[-1]:.3f} ms")
    worst = sorted(pairs, key=lambda p: -p[1])[:3]
    print("    slowest: " + ", ".join(f"seq {e['seq']} {d} {x / 1000:.3f} ms" for d, x, e in worst))
monitor_per_line = monitor_cpu_us / monitor_lines if monitor_lines else float("nan")
cpu_ratio = cpu_per_event / monitor_per_line if monitor_lines else float("nan")
print(f"  CPU: {cpu_us:.0f} µs over {n_events} events = {cpu_per_event:.1f} µs/event")
print(f"    ip monitor (same run, same groups): {monitor_cpu_us:.0f} µs over {monitor_lines} lines"
      f" = {monitor_per_line:.1f} µs/line ({monitor_lines / expected:.1f} lines per change)")
print(f"    ratio pinpath per event / ip monitor per line: {cpu_ratio:.2f}  (goal: 1.5 or less)")
rss_1000 = f"VmRSS after 1,000 changes {rss_1000_kb / 1024:.2f} MiB, " if rss_1000_kb else ""
print(f"  memory: {rss_1000}VmRSS after {expected} {rss_kb / 1024:.2f} MiB, VmHWM {hwm_kb / 1024:.2f} MiB,"
      f" {threads} threads  (goal: under 15 MiB after 1,000, no growth to 10,000)")
if gone_threads:
    print(f"  warning: threads {' '.join(gone_threads)} ended during the run; their CPU time is not counted")
if ip_changes != expected:
    print(f"  warning: ip monitor saw {ip_changes} carrier transitions, expected {expected}")
def utc(us):
    return time.strftime("%H:%M:%S", time.gmtime(us // 1_000_000)) + f".{us % 1_000_000:06d}"

for t, d in missed_by_pinpath[:10]:
    print(f"  no pinpath line for ip monitor's pa0 {d} at {utc(t)}Z")
if len(missed_by_pinpath) > 10:
    print(f"  … and {len(missed_by_pinpath) - 10} more ip monitor transitions without a pinpath line")
for e in unmatched[:10]:
    print(f"  unmatched pinpath line: seq {e.get('seq')} {e.get('event')} {e.get('previous_status')}->{e.get('status')} reason {e.get('reason')} interface {e.get('interface')}")
if len(unmatched) > 10:
    print(f"  … and {len(unmatched) - 10} more unmatched pinpath lines")
for p in problems[:10]:
    print(f"  pinpath stream problem: {p}")
if watch_status != 0:
    print(f"  warning: pinpath watch exited {watch_status} on SIGINT (expected 0)")

def fmt(x, digits):
    return "nan" if x != x else f"{x:.{digits}f}"

print(f"watch-latency: changes={expected} matched={len(pairs)} p50_ms={fmt(p50, 3)} p99_ms={fmt(p99, 3)}"
      f" max_ms={fmt(mx, 3)} cpu_us_per_event={fmt(cpu_per_event, 1)} ip_cpu_us_per_line={fmt(monitor_per_line, 1)}"
      f" cpu_ratio={fmt(cpu_ratio, 2)} rss_1000_mib={rss_1000_kb / 1024:.2f} rss_mib={rss_kb / 1024:.2f} hwm_mib={hwm_kb / 1024:.2f}")
EOF
