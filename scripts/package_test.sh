#!/usr/bin/env bash
# The C++ package (docs/cpp.md), as a C++ user gets it: build/ installed into a scratch prefix,
# then used from outside the source tree with nothing but that prefix and Debian's packages:
# examples/cpp-consumer through find_package(unigrad), and the ```cpp unigrad blocks of
# docs/cpp.md through pkg-config (unigrad-serve.pc, which requires unigrad.pc). Needs a built
# build/ (scripts/setup.sh); takes seconds when ccache has seen the two programs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=true
# Under build/ rather than mktemp's /tmp: fixed paths below CCACHE_BASEDIR hit the cache.
scratch=$root/build/package-test
prefix=$scratch/prefix
rm -rf "$scratch"
mkdir -p "$scratch"
fail() { echo "package_test: $*" >&2; exit 1; }

cmake --install build --prefix "$prefix" > "$scratch/install.log"
[ -x "$prefix/bin/ug" ] || fail "ug was not installed into bin/"
leaked=$(find "$prefix" -name '_C*' -o -name '*.py' -o -name '*.pyi' -o -name 'ug_tests' -o -name 'ug_bench')
[ -z "$leaked" ] || fail "the install holds the Python module or tests: $leaked"

# The example as a project of its own, copied out so that no path can lead back to src/.
cp -r examples/cpp-consumer "$scratch/consumer-src"
cmake -S "$scratch/consumer-src" -B "$scratch/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  > "$scratch/consumer-configure.log"
grep -qxF "unigrad_DIR:PATH=$prefix/lib/cmake/unigrad" "$scratch/consumer/CMakeCache.txt" ||
  fail "find_package(unigrad) found another copy: $(grep '^unigrad_DIR' "$scratch/consumer/CMakeCache.txt")"
cmake --build "$scratch/consumer" > "$scratch/consumer-build.log"
if grep -E -- "-(I|isystem ?)$root/(src|build/src)" "$scratch/consumer/compile_commands.json"; then
  fail "the consumer compiled against the source tree"
fi
"$scratch/consumer/consumer"

# docs/cpp.md's blocks as GoogleTest cases, compiled with the flags pkg-config gives.
.venv/bin/python tests/cpp/extract_snippets.py docs/cpp.md "$scratch/cpp_docs_test.cpp" CppDocs
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# Compiled and linked apart: ccache caches compilations only. (The flags are words, unquoted.)
ccache g++ -std=c++20 -Wall $(pkg-config --cflags unigrad-serve gtest_main) \
  -c "$scratch/cpp_docs_test.cpp" -o "$scratch/cpp_docs_test.o"
g++ "$scratch/cpp_docs_test.o" $(pkg-config --libs unigrad-serve gtest_main) -o "$scratch/cpp_docs_test"
"$scratch/cpp_docs_test" --gtest_brief=1
echo "package_test: installed package OK ($prefix)"
