#!/usr/bin/env bash
# blocking-threads.sh: how many threads pinpath starts for blocking work outside libcurl, counted by strace
# (clone and clone3 calls of the process and its threads: each starts one thread).
#
#   - `pinpath audit` of 1 and of N copies of one loopback `openssl s_server` (a valid leaf for 127.0.0.1):
#     each audit is an OpenSSL handshake of pinpath's own, 8 at once (the audit's default concurrency);
#   - `pinpath run --once` with 1 and N https endpoints on one `openssl s_server` serving an expired leaf with its
#     key: each probe's refused handshake is followed by a key-possession check (a second handshake), which
#     proves the key (tls_expired).
# The difference between N and 1 is what the blocking work costs in threads. It measures and prints; it
# asserts nothing.
#
#   PINPATH=$PWD/.build/debug/pinpath benchmarks/blocking-threads.sh      # N=100
#
# Environment: PINPATH (required), N (default 100), KEEP=1 to keep the scene (its directory is printed).
# Needs openssl and strace. The last line is machine-readable:
#   blocking-threads: audit_1=… audit_N=… possession_1=… possession_N=… n=…
set -euo pipefail

N=${N:-100}
KEEP=${KEEP:-0}
die() { echo "blocking-threads.sh: $*" >&2; exit 1; }
[[ -x ${PINPATH:-} ]] || die "set PINPATH to the pinpath binary"
command -v strace >/dev/null || die "strace is not installed"

scene=$(mktemp -d /tmp/pinpath-blocking-threads.XXXXXX)
servers=()
cleanup() {
    for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
    if [[ $KEEP == 1 ]]; then echo "scene kept in $scene"; else rm -rf "$scene"; fi
}
trap cleanup EXIT

# A CA, a valid leaf and a leaf that lapsed on 2021-01-01, both for 127.0.0.1 (`openssl ca` sets exact dates).
(
    cd "$scene"
    mkdir newcerts; : > index.txt; echo 1000 > serial
    cat > ca.cnf <<'CNF'
[ ca ]
default_ca = local
[ local ]
dir = .
database = index.txt
new_certs_dir = newcerts
serial = serial
default_md = sha256
policy = any
unique_subject = no
copy_extensions = none
[ any ]
commonName = supplied
[ req ]
distinguished_name = dn
[ dn ]
[ v3_ca ]
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[ leaf ]
basicConstraints = CA:false
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = IP:127.0.0.1
CNF
    openssl genpkey -quiet -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ca.key
    openssl req -x509 -new -config ca.cnf -key ca.key -subj "/CN=Blocking CA" -days 3650 -out ca.pem -extensions v3_ca
    for leaf in valid expired; do
        openssl genpkey -quiet -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $leaf.key
        openssl req -new -config ca.cnf -key $leaf.key -subj "/CN=$leaf" -out $leaf.csr
    done
    openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in valid.csr -out valid.pem -extensions leaf \
        -days 30 -notext 2>/dev/null
    openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr -out expired.pem -extensions leaf \
        -startdate 20200101000000Z -enddate 20210101000000Z -notext 2>/dev/null
)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
serve() {  # serve LEAF: starts an s_server (in this shell, so that cleanup kills it), sets served_port
    served_port=$(free_port)
    openssl s_server -quiet -accept "127.0.0.1:$served_port" -cert "$scene/$1.pem" -key "$scene/$1.key" -www \
        </dev/null >/dev/null 2>&1 &
    servers+=($!)
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$served_port") 2>/dev/null && break; sleep 0.1; done
}
# Threads started by COMMAND…, from strace's log.
threads() {
    strace -f -qq -e trace=clone,clone3 -e signal=none -o "$scene/trace" "$@" >/dev/null 2>&1 || true
    grep -cE 'clone3?\(' "$scene/trace"
}

serve valid
valid=$served_port
serve expired
expired=$served_port

audit() {  # audit COUNT
    local hosts=()
    for _ in $(seq "$1"); do hosts+=("127.0.0.1:$valid"); done
    threads "$PINPATH" audit --ca-file "$scene/ca.pem" --timeout 5s "${hosts[@]}"
}
possession() {  # possession COUNT
    {
        echo "events: { output: $scene/events.jsonl, probes: all }"
        echo "policies:"
        echo "  local: { mode: none, ca_file: $scene/ca.pem }"
        echo "endpoints:"
        for index in $(seq "$1"); do
            echo "  - { name: e$index, url: \"https://127.0.0.1:$expired/\", policy: local, timeout: 5s }"
        done
    } > "$scene/possession.yaml"
    rm -f "$scene/events.jsonl"
    local count
    count=$(threads "$PINPATH" run --once --config "$scene/possession.yaml")
    local expiredProbes
    expiredProbes=$(grep '"event":"probe.completed"' "$scene/events.jsonl" | grep -c '"error_category":"tls_expired"' || true)
    echo "possession $1: $expiredProbes of $1 probes tls_expired (the key proven)" >&2
    echo "$count"
}

audit_1=$(audit 1)
audit_n=$(audit "$N")
possession_1=$(possession 1)
possession_n=$(possession "$N")
echo "threads started: pinpath audit of 1 host: $audit_1; of $N: $audit_n"
echo "threads started: pinpath run --once, 1 expired endpoint: $possession_1; $N: $possession_n"
echo "blocking-threads: audit_1=$audit_1 audit_N=$audit_n possession_1=$possession_1 possession_N=$possession_n n=$N"
