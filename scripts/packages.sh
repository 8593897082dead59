# Sourced by scripts/run and scripts/test: installs the Debian packages pinpath needs, only those missing.
# C libraries (with pkg-config to find them); iproute2, python3 and the openssl CLI for the tests and benchmarks.
PINPATH_PACKAGES=(pkg-config libnl-3-dev libnl-route-3-dev libssl-dev libcurl4-openssl-dev iproute2 python3 openssl)

install_missing_packages() {
    local missing=() package
    for package in "${PINPATH_PACKAGES[@]}"; do
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
