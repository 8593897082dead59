#!/usr/bin/env bash
# Builds the libFuzzer targets with AddressSanitizer and runs one of them for a number of seconds.
#
# Usage: fuzz/run.sh TARGET SECONDS [libFuzzer flags…]
#   TARGET: configuration | pins | certificates | query-string | json
# The committed seeds (fuzz/corpus/TARGET, fuzz/regressions/TARGET) are read; what libFuzzer adds goes to fuzz/.build/corpus/TARGET
# (kept between runs, not committed), crash, timeout and out-of-memory inputs to fuzz/.build/artifacts/TARGET/.
# A found input becomes a regression test when copied to fuzz/regressions/TARGET/ (the property tests replay
# that folder). Replay one input: fuzz/run.sh TARGET 0 fuzz/.build/artifacts/TARGET/crash-…
set -euo pipefail
cd "$(dirname "$0")"
target=${1:?usage: fuzz/run.sh TARGET SECONDS [libFuzzer flags]}
seconds=${2:?usage: fuzz/run.sh TARGET SECONDS [libFuzzer flags]}
shift 2
case $target in
    configuration) product=FuzzConfiguration ;;
    pins) product=FuzzPins ;;
    certificates) product=FuzzCertificates ;;
    query-string) product=FuzzQueryString ;;
    json) product=FuzzJSON ;;
    *) echo "fuzz/run.sh: unknown target \"$target\" (configuration, pins, certificates, query-string, json)" >&2; exit 64 ;;
esac

# Release (optimized, with Swift's bounds and overflow checks kept) runs 5-10 times more inputs a second than
# debug; FUZZ_CONFIGURATION=debug for a build that is quicker to make and easier to debug.
build_configuration=${FUZZ_CONFIGURATION:-release}
# -sanitize=fuzzer instruments the Swift code for coverage and links libFuzzer; -Xcc does the same for the C
# code built from source (the shims; Debian's libyaml and libpcre2 are linked as they are, uninstrumented). lld, because gold fails on the sanitizer runtime.
# -parse-as-library: the targets have no top-level code; libFuzzer's driver is their main.
swift build -c "$build_configuration" --product "$product" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -use-ld=lld \
    -Xcc -fsanitize=fuzzer-no-link,address >&2
# A copy runs, so that building another target (or this one, changed) meanwhile does not touch it.
mkdir -p .build/run
binary=.build/run/$product
cp "$(swift build -c "$build_configuration" --show-bin-path)/$product" "$binary"

work=.build/corpus/$target artifacts=.build/artifacts/$target/
mkdir -p "$work" "$artifacts"
# The Swift runtime's backtracer would wait on a crash; libFuzzer and ASan print the stack themselves.
export SWIFT_BACKTRACE=enable=no
if [ "$seconds" = 0 ]; then
    exec "$binary" -runs=1 "$@"
fi
dictionary=dictionaries/$target.dict
# The regressions seed the run too: the inputs near a past bug are worth mutating.
seeds=("corpus/$target")
[ -d "regressions/$target" ] && seeds+=("regressions/$target")
exec "$binary" "$work" "${seeds[@]}" -dict="$dictionary" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=8192 -artifact_prefix="$artifacts" -print_final_stats=1 "$@"
