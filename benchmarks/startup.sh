#!/usr/bin/env bash
# startup.sh: what starting pinpath costs, next to starting openssl (issue 17's start-up goal).
#
# 1. Wall time: `pinpath --version` and `openssl version` (Debian's package) in one hyperfine run
#    (`hyperfine -N`, no shell; WARMUP warm-up runs each, then RUNS runs each, interleaved by hyperfine's
#    order of commands). Prints each one's mean, median and minimum, and the ratios pinpath / openssl.
# 2. Instructions (callgrind, when valgrind is installed): the same two commands, once each. The count
#    does not depend on what else runs on the machine, so it is the figure to compare between builds.
#    valgrind 3.19 cannot read the DWARF 5 debug information Swift writes, so pinpath is copied with
#    `strip -g` (symbols kept) first; the instructions run are the same.
# It measures and prints; it asserts nothing (the goal: `pinpath --version` at most 2× `openssl version`).
#
# Needs hyperfine and openssl (Debian's packages); valgrind for the instruction counts.
#   swift build -c release --product pinpath --static-swift-stdlib
#   PINPATH=$PWD/.build/release/pinpath benchmarks/startup.sh
#
# Environment:
#   PINPATH   the binary (default .build/release/pinpath in the package)
#   RUNS      timed runs of each command (default 300)
#   WARMUP    warm-up runs of each command (default 20)
#
# The last line is machine-readable:
#   startup: pinpath_mean_ms=… openssl_mean_ms=… mean_ratio=… pinpath_median_ms=… openssl_median_ms=…
#            median_ratio=… pinpath_instructions=… openssl_instructions=… instruction_ratio=… load=…
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PINPATH=${PINPATH:-$ROOT/.build/release/pinpath}
RUNS=${RUNS:-300}
WARMUP=${WARMUP:-20}

die() { echo "startup: $*" >&2; exit 1; }

[[ -x $PINPATH ]] || die "no pinpath binary at $PINPATH (swift build -c release --product pinpath --static-swift-stdlib)"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer (got '$RUNS')"
[[ $WARMUP =~ ^[0-9]+$ ]] || die "WARMUP must be a number (got '$WARMUP')"
command -v hyperfine >/dev/null || die "needs hyperfine (apt-get install hyperfine)"
command -v openssl >/dev/null || die "needs openssl"
command -v python3 >/dev/null || die "needs python3"

WORK=$(mktemp -d /tmp/startup.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

load=$(cut -d' ' -f1 /proc/loadavg)
hyperfine -N --style basic --warmup "$WARMUP" --runs "$RUNS" --export-json "$WORK/times.json" \
    "$PINPATH --version" "openssl version" >&2

instructions() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
        awk '/Collected :/ { print $NF }'
}
pinpath_ir=nan
openssl_ir=nan
if command -v valgrind >/dev/null; then
    strip -g -o "$WORK/pinpath" "$PINPATH"
    pinpath_ir=$(instructions "$WORK/pinpath" --version)
    openssl_ir=$(instructions "$(command -v openssl)" version)
else
    echo "valgrind is not installed: no instruction counts" >&2
fi

python3 - "$WORK/times.json" "$pinpath_ir" "$openssl_ir" "$load" <<'EOF'
import json, sys

results = json.load(open(sys.argv[1]))["results"]
pinpath, openssl = (r for r in results)
pinpath_ir, openssl_ir, load = sys.argv[2], sys.argv[3], sys.argv[4]

def ms(r, key):
    return r[key] * 1000

print(f"pinpath --version against openssl version, {len(pinpath['times'])} runs each, load average {load}")
for name, r in (("pinpath --version", pinpath), ("openssl version", openssl)):
    print(f"  {name:18} mean {ms(r, 'mean'):.2f} ± {ms(r, 'stddev'):.2f} ms, median {ms(r, 'median'):.2f} ms,"
          f" min {ms(r, 'min'):.2f} ms, user {ms(r, 'user'):.2f} ms, system {ms(r, 'system'):.2f} ms")
mean_ratio = pinpath["mean"] / openssl["mean"]
median_ratio = pinpath["median"] / openssl["median"]
print(f"  ratio pinpath / openssl: mean {mean_ratio:.2f}×, median {median_ratio:.2f}×,"
      f" min {pinpath['min'] / openssl['min']:.2f}×  (goal: 2× or less)")
if pinpath_ir != "nan" and openssl_ir != "nan":
    ir_ratio = f"{int(pinpath_ir) / int(openssl_ir):.2f}"
    print(f"  instructions (callgrind): pinpath {int(pinpath_ir):,}, openssl {int(openssl_ir):,}, ratio {ir_ratio}×")
else:
    ir_ratio = "nan"
print(f"startup: pinpath_mean_ms={ms(pinpath, 'mean'):.2f} openssl_mean_ms={ms(openssl, 'mean'):.2f}"
      f" mean_ratio={mean_ratio:.2f} pinpath_median_ms={ms(pinpath, 'median'):.2f}"
      f" openssl_median_ms={ms(openssl, 'median'):.2f} median_ratio={median_ratio:.2f}"
      f" pinpath_instructions={pinpath_ir} openssl_instructions={openssl_ir} instruction_ratio={ir_ratio} load={load}")
EOF
