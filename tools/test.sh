#!/usr/bin/env bash
# README quick start 2: install, build and run the whole test suite through ctest,
# then once more under AddressSanitizer + UndefinedBehaviorSanitizer, then each libFuzzer
# target for 15 s (tests/fuzz, docs/RELIABILITY.md; TQLAB_SKIP_FUZZ=1 skips it).
# Quick subset while developing: ctest --test-dir build -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
bash tools/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
if [ "${TQLAB_SKIP_SANITIZERS:-0}" != 1 ]; then
  # -O1: the sanitizers' usual level, and quicker to compile than -O2 on CI's 2 cores.
  BUILD_DIR=build-asan bash tools/build.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DTQLAB_SANITIZE=ON \
    -DTQLAB_BUILD_BENCHMARKS=OFF
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE slow
fi
if [ "${TQLAB_SKIP_FUZZ:-0}" != 1 ]; then
  # Bounded: 15 s per target, -timeout/-rss_limit_mb inside fuzz.sh. Any crash, leak, timeout,
  # out-of-memory or sanitizer report fails. The inputs found stay in build-fuzz, not the repo.
  bash tools/fuzz.sh --seconds 15 --jobs "$(nproc)"
fi
