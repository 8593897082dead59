#!/usr/bin/env bash
# audit-batch.sh: CPU per audit of a large `pinpath audit` batch, for two builds side by side (issue 30: audit's
# connections on the handshake engine instead of a thread of the blocking pool each).
#
# One nginx on loopback (benchmarks/lib/loopback-tls.sh: a root and a leaf for 127.0.0.1, RSA 2048, full
# handshakes only); a host list of HOSTS lines `127.0.0.1:PORT`; `pinpath audit --file LIST --ca-file root.pem
# --json >/dev/null` run ROUNDS times per binary, alternating BASELINE and PINPATH after one warm-up of each. CPU is
# user+system of the pinpath process (getrusage RUSAGE_CHILDREN), divided by HOSTS; wall time is the run's. nginx's
# own CPU is not counted. Each run must end with exit 0 (every audit trusted), or the script stops.
# It measures and prints; it asserts nothing.
#
#   swift build -c release --product pinpath --static-swift-stdlib
#   PINPATH=$PWD/.build/release/pinpath BASELINE=/path/to/main/pinpath benchmarks/audit-batch.sh
#
# Environment:
#   PINPATH   the pinpath binary (required)
#   BASELINE  a second binary to compare with (optional; main's release build)
#   HOSTS     audits per run (default 2000)
#   ROUNDS    runs of each binary (default 3)
#   KEEP      1 to keep the work directory
#
# The last line is machine-readable:
#   audit-batch: hosts=… pinpath_cpu_us_per_audit=… pinpath_wall_s=… [baseline_cpu_us_per_audit=… baseline_wall_s=… cpu_ratio=…]
set -euo pipefail
bench=audit-batch
source "$(cd "$(dirname "$0")" && pwd)/lib/loopback-tls.sh"

HOSTS=${HOSTS:-2000}
ROUNDS=${ROUNDS:-3}
[[ -n ${PINPATH:-} && -x $PINPATH ]] || die "set PINPATH to a release build of pinpath (see the comment at the top)"
[[ -z ${BASELINE:-} || -x $BASELINE ]] || die "no pinpath binary at BASELINE=$BASELINE"
[[ $HOSTS =~ ^[1-9][0-9]*$ ]] || die "HOSTS must be a positive integer (got '$HOSTS')"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer (got '$ROUNDS')"
install_missing no-blackbox
start_tls_nginx

for _ in $(seq "$HOSTS"); do echo "127.0.0.1:$https_port"; done > "$work/hosts"

python3 - "$work" "$HOSTS" "$ROUNDS" "$PINPATH" "${BASELINE:-}" <<'PY'
import resource, statistics, subprocess, sys, time

work, hosts, rounds, pinpath, baseline = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
binaries = {"pinpath": pinpath}
if baseline:
    binaries["baseline"] = baseline

def once(binary):
    command = [binary, "audit", "--file", f"{work}/hosts", "--ca-file", f"{work}/root.pem", "--json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"audit-batch: {binary} exited {result.returncode}: {result.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu / hosts * 1e6, wall

for binary in binaries.values():
    once(binary)
samples = {name: [] for name in binaries}
for round in range(rounds):
    for name, binary in binaries.items():
        cpu, wall = once(binary)
        samples[name].append((cpu, wall))
        print(f"round {round + 1}: {name:8} {cpu:7.0f} µs CPU per audit, {wall:6.2f} s wall for {hosts} audits", flush=True)

fields = [f"hosts={hosts}"]
medians = {}
for name in binaries:
    cpu = statistics.median(c for c, _ in samples[name])
    wall = statistics.median(w for _, w in samples[name])
    medians[name] = cpu
    print(f"{name}: median {cpu:.0f} µs CPU per audit, {wall:.2f} s wall")
    fields += [f"{name}_cpu_us_per_audit={cpu:.0f}", f"{name}_wall_s={wall:.2f}"]
if "baseline" in medians:
    fields.append(f"cpu_ratio={medians['pinpath'] / medians['baseline']:.3f}")
print("audit-batch: " + " ".join(fields))
PY
