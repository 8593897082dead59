#!/usr/bin/env bash
# audit.sh: what `pinpath audit` costs, next to the openssl pipeline people use to get a server's pin.
#
# 1. In process, without a network (pinpath-measure, a test-support executable of this package):
#    - the SPKI pin of one certificate (DER-encode the SubjectPublicKeyInfo, SHA-256), in µs;
#    - SecurityPolicy.evaluate of a served [leaf, intermediate] that verifies to a root in the CA file (a
#      3-certificate chain) for host valid.test: mode none, and public_key with the root's pin, in µs.
# 2. On loopback, against one `openssl s_server` holding the same leaf and intermediate:
#    - `pinpath audit valid.test:PORT --connect 127.0.0.1:PORT --ca-file CA` (everything it shows: protocol,
#      cipher, every certificate's details and pin, the verified chain, the verdicts), run directly;
#    - the pipeline `openssl s_client -connect … -servername valid.test </dev/null | openssl x509 -pubkey
#      -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`, run by bash -c
#      (a pipeline needs a shell, so the shell is part of its cost).
#    Each RUNS times, alternating, after one warm-up of each. Wall time is the median per run; CPU is
#    user+system of the command and all its children (getrusage RUSAGE_CHILDREN), per run. The server's own
#    CPU is not counted for either. Ratios are pinpath / pipeline from this one run.
# It measures and prints; it asserts nothing (the issue's goal: half the pipeline's wall time or less).
#
# Needs openssl and python3. Builds nothing:
#   swift build -c release --product pinpath --static-swift-stdlib
#   swift build -c release --product pinpath-measure --static-swift-stdlib
#   PINPATH=$PWD/.build/release/pinpath benchmarks/audit.sh
#
# Environment:
#   PINPATH   the pinpath binary (required)
#   MEASURE   the pinpath-measure binary (default: next to PINPATH)
#   RUNS      runs of each command (default 30)
#   ITERATIONS calls per batch for the in-process figures (default 2000)
#   KEEP      1 to keep the PKI and outputs (their directory is printed)
#
# The last line is machine-readable:
#   audit: spki_pin_us=… evaluate_none_us=… evaluate_pinned_us=… audit_wall_ms=… pipeline_wall_ms=… wall_ratio=…
#          audit_cpu_ms=… pipeline_cpu_ms=… cpu_ratio=…
set -euo pipefail

RUNS=${RUNS:-30}
ITERATIONS=${ITERATIONS:-2000}
KEEP=${KEEP:-0}

die() { echo "audit.sh: $*" >&2; exit 1; }

[[ -n ${PINPATH:-} ]] || die "set PINPATH to a release build of pinpath (see the comment at the top)"
[[ -x $PINPATH ]] || die "no pinpath binary at $PINPATH"
MEASURE=${MEASURE:-$(dirname "$PINPATH")/pinpath-measure}
[[ -x $MEASURE ]] || die "no pinpath-measure binary at $MEASURE (swift build -c release --product pinpath-measure --static-swift-stdlib)"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer (got '$RUNS')"
[[ $ITERATIONS =~ ^[1-9][0-9]*$ ]] || die "ITERATIONS must be a positive integer (got '$ITERATIONS')"
command -v openssl >/dev/null || die "needs openssl"
command -v python3 >/dev/null || die "needs python3"

WORK=$(mktemp -d /tmp/audit-bench.XXXXXX)
SERVER_PID=

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [[ $KEEP == 1 || $status -ne 0 ]]; then
        echo "files kept in $WORK" >&2
    else
        rm -rf "$WORK"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- A root, an intermediate and a leaf for valid.test: RSA 2048, SHA-256, as most servers have. ---
cd "$WORK"
cat > ext.cnf <<'CNF'
[ ca ]
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign
[ leaf ]
basicConstraints = CA:false
keyUsage = digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:valid.test
CNF
for name in root inter leaf; do openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out $name.key; done
openssl req -new -x509 -key root.key -subj "/CN=Bench Root" -days 3650 -addext "basicConstraints=critical,CA:true" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" -out root.pem
openssl req -new -key inter.key -subj "/CN=Bench Intermediate" -out inter.csr
openssl x509 -req -in inter.csr -CA root.pem -CAkey root.key -CAcreateserial -days 3650 -extfile ext.cnf -extensions ca \
    -out inter.pem 2>/dev/null
openssl req -new -key leaf.key -subj "/CN=valid.test" -out leaf.csr
openssl x509 -req -in leaf.csr -CA inter.pem -CAkey inter.key -CAcreateserial -days 365 -extfile ext.cnf -extensions leaf \
    -out leaf.pem 2>/dev/null

# --- In process. ---
MEASURED=$("$MEASURE" leaf.pem inter.pem root.pem "$ITERATIONS")
echo "$MEASURED"

# --- The server. ---
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
openssl s_server -accept "127.0.0.1:$PORT" -cert leaf.pem -key leaf.key -cert_chain inter.pem -quiet -www \
    >server.log 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.1)" 2>/dev/null && break
    sleep 0.05
done

# Both must work before they are timed: pinpath must trust the chain, the pipeline must print the leaf's pin.
"$PINPATH" audit "valid.test:$PORT" --connect "127.0.0.1:$PORT" --ca-file root.pem >audit.txt \
    || die "pinpath audit did not trust the chain (exit $?): $(cat audit.txt)"
PIPELINE="openssl s_client -connect 127.0.0.1:$PORT -servername valid.test </dev/null 2>/dev/null | openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"
EXPECTED=$(openssl x509 -in leaf.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)
[[ $(bash -c "$PIPELINE") == "$EXPECTED" ]] || die "the openssl pipeline did not print the leaf's pin"
grep -q "pin        sha256/$EXPECTED" audit.txt || die "pinpath audit did not print the leaf's pin"

# --- Loopback: alternate the two, RUNS times each. ---
RESULT=$(python3 - "$RUNS" "$PINPATH" "$PORT" "$PIPELINE" "$MEASURED" <<'PY'
import os, resource, statistics, subprocess, sys, time

runs, pinpath, port, pipeline, measured = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
audit = [pinpath, "audit", f"valid.test:{port}", "--connect", f"127.0.0.1:{port}", "--ca-file", "root.pem"]
shell = ["bash", "-c", pipeline]

def once(command):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1000, cpu * 1000

once(audit); once(shell)
samples = {"audit": [], "pipeline": []}
for _ in range(runs):
    samples["audit"].append(once(audit))
    samples["pipeline"].append(once(shell))

def summary(name):
    walls = [w for w, _ in samples[name]]
    cpus = [c for _, c in samples[name]]
    return statistics.median(walls), statistics.quantiles(walls, n=10)[-1] if len(walls) > 1 else walls[0], sum(cpus) / len(cpus)

a_wall, a_p90, a_cpu = summary("audit")
p_wall, p_p90, p_cpu = summary("pipeline")
print(f"{'':24}{'wall p50':>10}{'wall p90':>10}{'CPU/run':>10}")
print(f"{'pinpath audit':24}{a_wall:>8.2f}ms{a_p90:>8.2f}ms{a_cpu:>8.2f}ms")
print(f"{'openssl pipeline':24}{p_wall:>8.2f}ms{p_p90:>8.2f}ms{p_cpu:>8.2f}ms")
print(f"{'ratio pinpath/pipeline':24}{a_wall / p_wall:>9.2f}x{'':>10}{a_cpu / p_cpu:>9.2f}x   (goal: wall 0.50x or less)")
fields = dict(part.split("=", 1) for part in measured.split()[1:])
print("audit: " + " ".join([
    f"spki_pin_us={fields['spki_pin_us']}", f"evaluate_none_us={fields['evaluate_none_us']}",
    f"evaluate_pinned_us={fields['evaluate_pinned_us']}",
    f"audit_wall_ms={a_wall:.2f}", f"pipeline_wall_ms={p_wall:.2f}", f"wall_ratio={a_wall / p_wall:.2f}",
    f"audit_cpu_ms={a_cpu:.2f}", f"pipeline_cpu_ms={p_cpu:.2f}", f"cpu_ratio={a_cpu / p_cpu:.2f}",
]))
PY
)
echo "runs=$RUNS port=$PORT"
echo "$RESULT"
