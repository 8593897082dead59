# Sourced by scripts/run and scripts/test: installs the Debian packages pinpath needs, only those missing.
# C libraries (with pkg-config to find them; libpsl5, loaded at run time, reads the list of `publicsuffix`; libyaml-dev
# and libpcre2-dev bring the runtime libyaml-0-2 and libpcre2-8-0); libstdc++-12-dev, whose libstdc++.a the release build links (Package.swift; the Swift
# toolchain's own dependencies name it too); iproute2, python3 and the openssl CLI for the tests and benchmarks.
PINPATH_PACKAGES=(pkg-config libnl-3-dev libnl-route-3-dev libssl-dev libcurl4-openssl-dev libyaml-dev libpcre2-dev
  libstdc++-12-dev libpsl5
  publicsuffix iproute2 python3 openssl)
# The tests' servers: python3-venv for httpbin (PyPI), nginx for the agent's many-endpoint runs; curl, the real
# HTTP client that scrapes the agent's /metrics; prometheus for promtool, which checks and unit-tests
# etc/prometheus/pinpath.rules.yml (Debian 12 has no smaller package with it); prometheus-node-exporter, which reads
# the agent's textfile as another user, as the shipped unit is installed. The packaging tests: debhelper (with
# dpkg-dev) builds the .deb, lintian checks it, systemd's systemd-analyze verifies the unit, man-db and
# bsdextrautils (col) render a man page. slapd, the real LDAP server the ldap:// and ldaps:// tests start from a
# directory of their own, and ldap-utils, whose ldapsearch -ZZ is the control that StartTLS works against it.
# strace counts the threads pinpath run starts (tcp:// exchanges start none); python3-cryptography gives the TLS 1.3
# replay server (a server without the key of the certificate it sends) its X25519 exchange. chromium and
# chromium-driver (its WebDriver server) load the agent's status page headless (StatusPageBrowserTests).
# zstd compresses the zstd bomb the body server sends to streams (StreamedBodyTests).
PINPATH_TEST_PACKAGES=(python3-venv nginx-light curl prometheus prometheus-node-exporter debhelper lintian systemd man-db
  bsdextrautils slapd ldap-utils python3-cryptography strace chromium chromium-driver zstd)

install_missing_packages() {
    local missing=() package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "pinpath: need root (or sudo) to install: ${missing[*]}" >&2; return 1; }
        sudo="sudo"
    fi
    echo "pinpath: installing ${missing[*]}" >&2
    $sudo apt-get update -qq >&2 &&
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# httpbin and gunicorn from PyPI, in a virtual environment of the build directory (Debian's Python refuses
# system-wide pip installs); prometheus_client, whose parsers read the agent's exposition as Python scrapers do.
# jsonschema, which checks the status document (/api/v1/status) against docs/status-api.schema.json.
# Exports PINPATH_TEST_PYTHON for the tests.
install_test_python() {
    local venv=.build/test-python
    if ! "$venv/bin/python3" -c 'import httpbin, gunicorn, prometheus_client, jsonschema' 2>/dev/null; then
        echo "pinpath: installing httpbin, gunicorn, prometheus_client and jsonschema into $venv" >&2
        python3 -m venv "$venv" >&2 &&
            "$venv/bin/python3" -m pip install -q --disable-pip-version-check httpbin gunicorn prometheus_client jsonschema >&2
    fi
    PINPATH_TEST_PYTHON=$PWD/$venv/bin/python3
    export PINPATH_TEST_PYTHON
}
