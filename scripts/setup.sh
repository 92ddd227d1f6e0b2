#!/usr/bin/env bash
# One idempotent setup for a fresh Debian 12 machine: Debian packages for the C/C++ side,
# a pinned virtual environment (.venv) for the Python side, then one CMake build (build/)
# that produces the library, the `ug` program, the C++ tests and the Python module.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

apt_packages=(
  build-essential ninja-build ccache pkg-config
  libopenblas-dev libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev nlohmann-json3-dev
  libprotobuf-dev protobuf-compiler libonnx-dev libzip-dev libfftw3-dev clang-14 libclang-rt-14-dev clang-format-14
  libcpp-httplib-dev libdlpack-dev wrk valgrind libopenmpi-dev openmpi-bin
  dataset-fashion-mnist
)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd=sudo
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
if ! cmp -s requirements-dev.txt .venv/.requirements-installed 2>/dev/null; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements-dev.txt
  cp requirements-dev.txt .venv/.requirements-installed
fi

export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# Paths relative to the checkout, so a fresh clone elsewhere (as CI makes) hits the cache.
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=true
nanobind_dir=$(.venv/bin/python -m nanobind --cmake_dir)
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$root/.venv/bin/python" -Dnanobind_DIR="$nanobind_dir" \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
cmake --build build -j"$(nproc)"
# Development install: the source package python/unigrad holds the freshly built extension.
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$root/python" > "$site/unigrad-dev.pth"
