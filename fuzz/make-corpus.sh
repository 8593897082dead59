#!/usr/bin/env bash
# Writes the seed corpora of the fuzz targets (fuzz/corpus/TARGET). Every seed is made here, so the script
# is the note saying how each was made; run it again to regenerate them (the keys come out new each time).
# Usage: fuzz/make-corpus.sh
set -euo pipefail
cd "$(dirname "$0")"
rm -rf corpus && mkdir -p corpus/{configuration,pins,certificates,query-string,json}
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT

# certificates: a small PKI with openssl (EC P-256 keeps the seeds short), in PEM and DER, plus keys and a CSR.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/ca.key" -out "$work/ca.pem" \
    -days 3650 -subj "/CN=Fuzz Root/O=pinpath" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/leaf.key" -out "$work/leaf.csr" \
    -subj "/CN=leaf.example.com" 2>/dev/null
printf 'subjectAltName=DNS:leaf.example.com,DNS:*.example.com,IP:127.0.0.1\n' > "$work/ext"
openssl x509 -req -in "$work/leaf.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -days 365 \
    -extfile "$work/ext" -out "$work/leaf.pem" 2>/dev/null
cp "$work/ca.pem" corpus/certificates/root.pem
cat "$work/leaf.pem" "$work/ca.pem" > corpus/certificates/bundle.pem
openssl x509 -in "$work/leaf.pem" -outform der -out corpus/certificates/leaf.der
openssl pkey -in "$work/leaf.key" -out corpus/certificates/leaf-key.pem
openssl pkey -in "$work/leaf.key" -pubout -out corpus/certificates/leaf-public.pem
openssl pkey -in "$work/leaf.key" -pubout -outform der -out corpus/certificates/leaf-public.der
openssl req -in "$work/leaf.csr" -outform pem -out corpus/certificates/leaf.csr
openssl x509 -in "$work/ca.pem" -trustout -out corpus/certificates/trusted.pem 2>/dev/null
openssl genrsa -traditional 1024 2>/dev/null | openssl rsa -RSAPublicKey_out 2>/dev/null > corpus/certificates/rsa-public.pem
printf -- '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n' > corpus/certificates/damaged.pem

# pins: the pins of the PKI above as `pinpath pins` prints them (FIELD-NOTES §1's openssl pipeline), and host
# patterns as policies write them.
pin() { openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64; }
printf 'sha256/%s' "$(pin "$work/ca.pem")" > corpus/pins/root-pin
printf 'sha256/%s' "$(pin "$work/leaf.pem")" > corpus/pins/leaf-pin
printf 'pin-sha256="%s"' "$(pin "$work/leaf.pem")" > corpus/pins/hpkp-form
printf 'sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' > corpus/pins/zero-pin
printf '**.example.com' > corpus/pins/any-labels
printf '*.api.example.co.uk.' > corpus/pins/one-label
printf 'Leaf.Example.COM' > corpus/pins/exact

# configuration: the repository's commented example, and small files of each section.
cp ../etc/pinpath.yaml corpus/configuration/example.yaml
printf 'endpoints:\n  - name: a\n    url: https://a.example.com/health\n    interval: 1h30m\n    timeout: 500ms\n' > corpus/configuration/endpoint.yaml
cat > corpus/configuration/policy.yaml <<YAML
policies:
  pins:
    mode: public_key
    pins: ["sha256/$(pin "$work/ca.pem")", "sha256/$(pin "$work/leaf.pem")"]
    hosts: ["**.example.com", "*.example.net"]
    expires: 2027-02-28
    enforce: false
endpoints:
  - {name: b, url: "https://b.example.com:8443/?q=1", policy: pins, expect: {status: [204, "2xx", "300-302"]}}
YAML
printf 'events: {output: events.jsonl, max_size: 1MiB, keep: 0, probes: changes}\nmetrics:\n  textfile: m.prom\nreachability:\n  targets: [1.1.1.1, "::1", example.com]\n' > corpus/configuration/events.yaml
printf 'endpoints:\n  - name: c\n    url: http://c.example.com/\n    headers:\n      Authorization: "Bearer ${PINPATH_FUZZ_TOKEN}"\n    expect:\n      body_matches: "ok|[0-9]+"\n' > corpus/configuration/headers.yaml
printf 'base: &b {interval: 5s}\nendpoints:\n  - *b\n  - [1, 2]\n  -\n' > corpus/configuration/anchors.yaml
printf 'endpoints:\r\n  - name: d\r\n    url: "https://d.example.com/\\u00e9"\r\n' > corpus/configuration/crlf.yaml

# query-string: the bytes are read as choices (Tests/PinpathFuzzing/FuzzBytes.swift), so any bytes do; these
# are fixed patterns that describe small, nested and wide parameter sets.
printf '\x03\x01a\x05\x03bc\x01\x02d\x07\x02\x05\x01e\x08' > corpus/query-string/small
printf '\x05\x02ab\x08\x03\x01x\x07\x02\x04\x01\x02\x03\x04\x05\x06\x07\x08\x00\x01\x01y\x06\x03\xc8\xc9\xca' > corpus/query-string/nested
head -c 256 /dev/zero | tr '\0' '\377' > corpus/query-string/unicode
seq 0 255 | awk '{printf "%c", $1}' > corpus/query-string/every-byte

# json: documents of each kind, as servers send them.
printf '{"a": [1, -2.5e3, true, false, null], "b": {"c": "d\\u00e9\\ud83d\\ude00\\n"}}' > corpus/json/object.json
printf '[0, -0, 0.1, 1E400, 123456789012345678901234567890, "\\/\\b\\f\\r\\t"]' > corpus/json/numbers.json
printf ' \n\t"text"\r\n' > corpus/json/string.json
printf '[[[[[[[[[[[[[[[[{"x":[]}]]]]]]]]]]]]]]]]' > corpus/json/deep.json
printf '{"a":1,}' > corpus/json/trailing-comma.json
