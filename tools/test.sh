#!/usr/bin/env bash
# README quick start 2: install, build and run the whole test suite through ctest, then once
# more under AddressSanitizer + UndefinedBehaviorSanitizer, then each libFuzzer target for 15 s
# (tests/fuzz, docs/RELIABILITY.md). One clang build (build-san) serves both: the sanitized tests
# and the fuzz targets, instrumented alike, so the sources are compiled twice in all, not three
# times. TQLAB_SKIP_SANITIZERS=1 skips that build and both of its passes, TQLAB_SKIP_FUZZ=1 the
# fuzzing only. Each phase prints its wall time.
# Quick subset while developing: ctest --test-dir build -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
phase_start=$SECONDS
phase() {
  echo "== tools/test.sh: $1 took $((SECONDS - phase_start)) s (total $((SECONDS - started)) s)"
  phase_start=$SECONDS
}
bash tools/install_deps.sh
phase "install_deps.sh"
# The benchmarks are built by tools/bench.sh, which runs them; the suite does not need them.
bash tools/build.sh -DTQLAB_BUILD_BENCHMARKS=OFF
phase "Release build"
ctest --test-dir build --output-on-failure -j "$(nproc)"
phase "ctest (Release)"
if [ "${TQLAB_SKIP_SANITIZERS:-0}" != 1 ]; then
  # -O1: the sanitizers' usual level, and quicker to compile than -O2 on CI's 2 cores;
  # -gline-tables-only: reports keep their file:line, without the cost of full debug info.
  CC=clang CXX=clang++ BUILD_DIR=build-san bash tools/build.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DTQLAB_FUZZ=ON -DTQLAB_BUILD_BENCHMARKS=OFF
  phase "sanitizer build (clang, ASan + UBSan, fuzz targets)"
  # malloc_context_size=10: a report still shows ten frames of where memory was allocated, and
  # each allocation records fewer (the default 30 dominates allocation-heavy tests).
  ASAN_OPTIONS=detect_leaks=1:malloc_context_size=10 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-san --output-on-failure -j "$(nproc)" -LE slow
  phase "ctest (ASan + UBSan, without the tests labelled slow)"
  if [ "${TQLAB_SKIP_FUZZ:-0}" != 1 ]; then
    # Bounded: 15 s per target, -timeout/-rss_limit_mb inside fuzz.sh. Any crash, leak, timeout,
    # out-of-memory or sanitizer report fails. The inputs found stay in build-san, not the repo.
    TQLAB_FUZZ_SKIP_BUILD=1 TQLAB_FUZZ_BUILD_DIR=build-san bash tools/fuzz.sh --seconds 15 --jobs "$(nproc)"
    phase "fuzzing"
  fi
fi
echo "== tools/test.sh: every phase passed in $((SECONDS - started)) s"
