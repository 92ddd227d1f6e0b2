#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs every test: the C++ suite under ctest, the
# installed C++ package used by programs of their own (scripts/package_test.sh), the Python
# suite under pytest (ops checked against PyTorch 2.13; the elementwise and reduction tests
# once more on the portable kernels), and the C++ suite again built with AddressSanitizer
# (leak checks included) and UndefinedBehaviorSanitizer (build-asan/), where any report fails
# the run, and the file loaders under libFuzzer (scripts/fuzz.sh, the same build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
# Every include points down the layer stack (the build already checked the symbols), the
# Python code has no undefined or unused names (ruff, configured in pyproject.toml), and the
# C++ code is formatted as .clang-format says (run `clang-format-14 -i` on what it names).
.venv/bin/python scripts/check_layers.py
.venv/bin/ruff check .
git ls-files -z '*.cpp' '*.h' | xargs -0 clang-format-14 --dry-run --Werror
(cd build && ctest --output-on-failure -j2)
# The C++ package: installed into a scratch prefix, then built against by a project of its own
# (examples/cpp-consumer, find_package) and by docs/cpp.md's snippets (pkg-config).
scripts/package_test.sh
.venv/bin/python -m pytest -q -n 2 tests/python
# The kernel sets this machine would not pick by itself (it picks AVX-512 where it has it, and
# the bfloat16 GEMM where it has AVX512-BF16, on AMX's tiles where it has those: UG_CPU_ISA=avx512
# leaves the GEMM out, avx512bf16 its AMX microkernel).
for isa in generic avx2; do
  UG_CPU_ISA=$isa .venv/bin/python -m pytest -q -n 2 tests/python/test_elementwise.py tests/python/test_reduce_linalg.py \
    tests/python/test_bf16_matmul.py tests/python/test_bf16_conv.py tests/python/test_attention.py
done
for isa in avx512 avx512bf16; do
  UG_CPU_ISA=$isa .venv/bin/python -m pytest -q -n 2 tests/python/test_bf16_matmul.py tests/python/test_bf16_conv.py
done
# float32 convolutions take the direct AVX-512 kernel by default: the GEMM paths under generic.
UG_CPU_ISA=generic .venv/bin/python -m pytest -q -n 2 tests/python/test_conv.py tests/python/test_conv_direct.py

# The C++ suite and the fuzz targets, built once with the sanitizers (scripts/sanitized_build.sh).
scripts/sanitized_build.sh ug_tests $(basename -s .cpp fuzz/*_fuzz.cpp)
# The tests that start MPI stay out of it: OpenMPI leaves its own allocations (libmpi, hwloc,
# plugins it unloads) for the leak checker to report; they run in the ctest pass above.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  build-asan/tests/cpp/ug_tests --gtest_filter='-Distributed.*:MigrationDocs.DistributedDataParallelTraining_*'

# Every file and request parser fuzzed with libFuzzer from the committed seed corpus in
# fuzz/corpus/, on a fixed seed and number of inputs so that the run is reproducible.
scripts/fuzz.sh
