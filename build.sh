#!/usr/bin/env bash
# hcasim's one entry point for a fresh machine (Debian 12, as root or with sudo):
#   ./build.sh run    install what is missing, build, run the bundled quickstart scenario
#   ./build.sh test   install what is missing, build, run the whole test suite (extra
#                     arguments go to ctest, e.g. -L unit)
# Options (environment): BUILD_DIR (default build), BUILD_TYPE (default RelWithDebInfo),
# HCASIM_WERROR=ON to treat warnings as errors, HCASIM_SANITIZE=ON for ASan/UBSan, JOBS.
set -euo pipefail
cd "$(dirname "$0")"

# libibverbs-dev: the verbs headers hcasim's libibverbs is built from (apps/); ibverbs-utils,
# perftest and python3-pyverbs: the unmodified programs the apps tests run on it.
packages=(g++ cmake make pkg-config libsystemc-dev nlohmann-json3-dev libgtest-dev libboost-program-options-dev python3-matplotlib gtkwave
          libibverbs-dev ibverbs-utils perftest python3-pyverbs)

install_missing() {
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "build.sh: installing ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
    cmake -S . -B "${BUILD_DIR:-build}" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
        -DHCASIM_WERROR="${HCASIM_WERROR:-OFF}" -DHCASIM_SANITIZE="${HCASIM_SANITIZE:-OFF}" >/dev/null
    cmake --build "${BUILD_DIR:-build}" -j "${JOBS:-$(nproc)}"
}

case "${1:-}" in
    run)
        install_missing
        build
        shift
        exec "${BUILD_DIR:-build}/hcasim" run scenarios/quickstart.json "$@"
        ;;
    test)
        install_missing
        build
        shift
        cd "${BUILD_DIR:-build}"
        exec ctest --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
        ;;
    *)
        echo "usage: ./build.sh run | test" >&2
        exit 2
        ;;
esac
