#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang-14, AddressSanitizer and UBSan (build-asan/,
# scripts/sanitized_build.sh)
# and runs each on FUZZ_RUNS inputs (default 200000) mutated from its seed corpus in fuzz/corpus/
# with random seed FUZZ_SEED (default 1), so that a run is reproducible: what passes here passes
# in CI. FUZZ_SECONDS (default 120) bounds each target's time. FUZZ_RUNS=-1 FUZZ_SEED=0
# FUZZ_SECONDS=1800 is a long run on a drawn seed that looks for new findings. A crash, sanitizer
# report, leak, 5 s timeout or 2 GB memory use fails the run; the input that caused it is left in
# build-asan/crashes/<target>/. FUZZ_TARGETS="csv_fuzz npz_fuzz" runs only those.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${FUZZ_SECONDS:-120} runs=${FUZZ_RUNS:-200000} seed=${FUZZ_SEED:-1}

if [ -n "${FUZZ_TARGETS:-}" ]; then
  read -r -a targets <<< "$FUZZ_TARGETS"
else
  targets=()
  for f in fuzz/*_fuzz.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
scripts/sanitized_build.sh "${targets[@]}"

failed=()
for t in "${targets[@]}"; do
  # New inputs go to a scratch corpus (first directory), emptied first so that every run starts
  # from the committed seeds alone.
  rm -rf "build-asan/corpus/$t"
  mkdir -p "build-asan/corpus/$t" "build-asan/crashes/$t"
  echo "fuzz: $t, $runs runs from seed $seed (at most ${seconds}s)"
  if ! "build-asan/fuzz/$t" -runs="$runs" -seed="$seed" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=5 \
      -artifact_prefix="build-asan/crashes/$t/" -print_final_stats=1 \
      "build-asan/corpus/$t" "fuzz/corpus/$t" 2> "build-asan/$t.log"; then
    tail -n 60 "build-asan/$t.log"
    failed+=("$t")
  fi
  grep -E "^stat::number_of_executed_units|^Done" "build-asan/$t.log" || true
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs in build-asan/crashes/)"
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran without a finding (each $runs inputs or ${seconds}s, whichever came first)"
