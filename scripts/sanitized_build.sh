#!/usr/bin/env bash
# Builds the given targets in build-asan/: clang-14, AddressSanitizer (leak checks included) and
# UndefinedBehaviorSanitizer over everything, libFuzzer's coverage over the library's layers.
# One build serves both the sanitized C++ suite (ug_tests, scripts/test.sh) and the libFuzzer
# targets of fuzz/ (scripts/fuzz.sh): a second one would compile the library a third time in a
# CI run, and clang compiles the instrumented code about twice as fast as GCC does.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# The same ccache settings as setup.sh, so that a clean clone hits the cache too.
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=true
if [ ! -f build-asan/build.ninja ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DUG_SANITIZE=ON -DUG_BUILD_FUZZ=ON \
    -DUG_BUILD_PYTHON=OFF -DUG_BUILD_BENCH=OFF -DUG_BUILD_CLI=OFF \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
cmake --build build-asan -j"$(nproc)" --target "$@"
