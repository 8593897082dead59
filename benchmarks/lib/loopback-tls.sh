# Sourced by benchmarks that probe a local nginx over TLS (agent-scale.sh, probe-route.sh, status-api.sh): the work directory
# and its clean-up, the processes to stop, the nginx with its PKI, /proc's CPU and RSS figures, and
# blackbox_exporter driven at a fixed rate. The caller sets `bench` (its name, for messages) and `set -euo pipefail`
# before sourcing, and DURATION (seconds a driven run lasts) before calling run_blackbox.

lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "$bench: $*" >&2; exit 1; }

# Installs what is missing (root only): nginx-light always, prometheus-blackbox-exporter unless $1 is "no-blackbox".
install_missing() {
    local missing=()
    command -v nginx >/dev/null || missing+=(nginx-light)
    command -v prometheus-blackbox-exporter >/dev/null || [[ ${1:-} == no-blackbox ]] || missing+=(prometheus-blackbox-exporter)
    if ((${#missing[@]})); then
        echo "$bench: installing ${missing[*]}" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
    fi
}

work=$(mktemp -d "/tmp/$bench.XXXXXX")
pids=()
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    for pid in "${pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; fi
    done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [[ ${KEEP:-0} == 1 ]]; then echo "$bench: kept $work" >&2; else rm -rf "$work"; fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Forgets a PID that has been waited for, so that cleanup never signals a recycled one.
forget() { local keep=() p; for p in "${pids[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done; pids=("${keep[@]}"); }

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; die "nothing listens on port $1"; }

ticks=$(getconf CLK_TCK)
# CPU seconds of a process, all threads: utime + stime from /proc/PID/stat (after the command name).
cpu_seconds() { awk -v t="$ticks" '{ sub(/^.*\) /, ""); print ($12 + $13) / t }' "/proc/$1/stat"; }
# Samples VmRSS (KiB) every second into a file until the process ends.
sample_rss() {
    while [[ -r /proc/$1/status ]]; do
        awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null >> "$2" || true
        sleep 1
    done
}
# CPU nanoseconds of pinpath's listener thread (`metrics.listen`; /metrics and /probe) (NIO's event loop, named NIO-ELT-…): the first field of its
# schedstat, exact where /stat counts 10 ms ticks; 0 without one.
loop_cpu_ns() {
    local task
    for task in /proc/"$1"/task/*; do
        if [[ $(cat "$task/comm" 2>/dev/null) == NIO-ELT* ]]; then read -r ns _ < "$task/schedstat"; echo "$ns"; return; fi
    done
    echo 0
}
peak_mib() { sort -n "$1" | tail -1 | awk '{ printf "%.1f", $1 / 1024 }'; }
calc() { python3 -c "nan = float('nan'); print(f'{$1:.${2:-2}f}')"; }

# A root and a leaf for 127.0.0.1 in $work (root.pem, leaf.pem and leaf.key; root_pin and leaf_pin, their SPKI
# pins): RSA 2048 valid 400 days (no expiry warning is due).
make_tls_pki() {
    (
        cd "$work"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout root.key -out root.pem -subj "/CN=$bench-root" -days 400 \
            -addext basicConstraints=critical,CA:true -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj /CN=127.0.0.1 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:false\nextendedKeyUsage=serverAuth\n' > leaf.ext
        openssl x509 -req -in leaf.csr -CA root.pem -CAkey root.key -CAcreateserial -days 400 -extfile leaf.ext \
            -out leaf.pem 2>/dev/null
    )
    pin() { openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64; }
    root_pin=$(pin "$work/root.pem"); leaf_pin=$(pin "$work/leaf.pem")
}

# make_tls_pki's root and leaf, and nginx serving them: worker_processes 1, TLS 1.2 and 1.3 (nginx 1.22's default
# stops at 1.2), no session cache and no tickets (every connection is a full handshake), `return 200`. Sets
# https_port and base (https://127.0.0.1:PORT). With $1 = "log", nginx logs each request's connection number and
# whether its TLS session was reused to $work/access.log (handshakes_seen reads it).
start_tls_nginx() {
    make_tls_pki
    local access="access_log off;"
    [[ ${1:-} == log ]] && access="log_format handshakes '\$connection \$ssl_session_reused'; access_log $work/access.log handshakes;"
    https_port=$(port)
    cat > "$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx.err;
daemon off;
events { worker_connections 8192; }
http {
  $access
  client_body_temp_path $work; proxy_temp_path $work; fastcgi_temp_path $work; uwsgi_temp_path $work; scgi_temp_path $work;
  server {
    listen 127.0.0.1:$https_port ssl backlog=4096;
    ssl_certificate $work/leaf.pem;
    ssl_certificate_key $work/leaf.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache off;
    ssl_session_tickets off;
    location / { return 200 "ok\n"; }
  }
}
CONF
    nginx -c "$work/nginx.conf" -p "$work" & pids+=($!)
    wait_port "$https_port"
    base=https://127.0.0.1:$https_port
}

# With start_tls_nginx log: "requests connections reused" seen by nginx since the log was last cleared (then
# clears it). Each probe a full handshake: requests = connections and reused = 0.
handshakes_seen() {
    sleep 1  # nginx writes its log line when the request ends
    awk '{ requests++; connections[$1] = 1; if ($2 == "r") reused++ } END { print requests + 0, length(connections), reused + 0 }' \
        "$work/access.log"
    : > "$work/access.log"
}

# blackbox_exporter's configuration: the http module `https_2xx` and the tcp module `tls_connect` (tls: true), both
# trusting the bench root, and the tcp module `tcp_connect` (a TCP connection, no TLS).
cat > "$work/blackbox.yml" <<YML
modules:
  https_2xx:
    prober: http
    timeout: 10s
    http:
      preferred_ip_protocol: ip4
      tls_config:
        ca_file: $work/root.pem
  tls_connect:
    prober: tcp
    timeout: 10s
    tcp:
      preferred_ip_protocol: ip4
      tls: true
      tls_config:
        ca_file: $work/root.pem
  tcp_connect:
    prober: tcp
    timeout: 10s
    tcp:
      preferred_ip_protocol: ip4
YML

# Drives an exporter's /probe (lib/probe-driver.py: QUERY for target i = 1…N, N every INTERVAL seconds, evenly
# spread, for DURATION seconds); prints "probes successes".
drive_probes() { python3 "$lib/probe-driver.py" "$@"; }

# The /probe query of blackbox's module for a kind (https: each endpoint's URL, one path each; tls and tcp: host:port).
blackbox_query() {
    case $1 in
        tls) echo "module=tls_connect&target=${base#https://}" ;;
        tcp) echo "module=tcp_connect&target=${base#https://}" ;;
        *) echo "module=https_2xx&target=$base/e{i}" ;;
    esac
}

# Runs blackbox_exporter driven at N probes per INTERVAL seconds for DURATION seconds; prints
# "cpu_ms_per_probe rss_mib probes successes": its own CPU (the driver's is not counted) and peak RSS.
run_blackbox() {
    local n=$1 kind=$2 interval=$3 bport rss=$work/rss-blackbox-$1-$2
    bport=$(port); : > "$rss"
    prometheus-blackbox-exporter --config.file="$work/blackbox.yml" --web.listen-address="127.0.0.1:$bport" \
        2> "$work/blackbox-$n-$kind.stderr" & local pid=$!; pids+=("$pid")
    wait_port "$bport"
    sample_rss "$pid" "$rss" & local sampler=$!; pids+=("$sampler")
    local cpu0 cpu1 result
    cpu0=$(cpu_seconds "$pid")
    result=$(drive_probes "$bport" "$(blackbox_query "$kind")" "$n" "$interval" "$DURATION")
    cpu1=$(cpu_seconds "$pid")
    kill -TERM "$pid"; wait "$pid" || true; forget "$pid"
    wait "$sampler" 2>/dev/null || true; forget "$sampler"
    local probes successes
    read -r probes successes <<<"$result"
    echo "$(calc "($cpu1 - $cpu0) / $probes * 1000" 3) $(peak_mib "$rss") $probes $successes"
}
