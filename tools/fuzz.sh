#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, clang + ASan + UBSan) in build-fuzz and runs them.
#
#   bash tools/fuzz.sh [--minutes M | --seconds S] [--target NAME] [--merge] [--jobs N]
#
# Each target (npy npz safetensors gguf sweep_config spec tokenizer model_folder profile shard journal,
# or the one --target names) runs for the given time (default 1 minute) from its seed corpus tests/fuzz/corpus/NAME with its
# dictionary, one target after another (--jobs N: N at a time). Inputs the run finds
# interesting go to build-fuzz/fuzz-work/NAME (kept between runs and used as a corpus
# again), never into the repository unless --merge is given: then `-merge=1` adds to
# tests/fuzz/corpus/NAME only the inputs that reach new coverage. A crash, leak, timeout,
# out-of-memory or sanitizer report stops with exit 1 and leaves the input in
# build-fuzz/fuzz-findings/NAME/ (reproduce: build-fuzz/tests/fuzz/fuzz_NAME FILE).
# Logs (with the final "#N DONE cov: ft: corp:" line, docs/RELIABILITY.md) are in
# build-fuzz/fuzz-logs/NAME.log. TQLAB_FUZZ_SKIP_BUILD=1 skips the build step;
# TQLAB_FUZZ_BUILD_DIR names another build folder (e.g. a copy of the binaries).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60
only=""
merge=0
jobs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) seconds=$(( $2 * 60 )); shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --target) only=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
all=(npy npz safetensors gguf sweep_config spec tokenizer model_folder profile shard journal)
targets=("${all[@]}")
if [ -n "$only" ]; then
  case " ${all[*]} " in *" $only "*) targets=("$only") ;; *) echo "fuzz.sh: unknown target '$only' (known: ${all[*]})" >&2; exit 2 ;; esac
fi
declare -A dict=([npy]=npy [npz]=zip [safetensors]=json [gguf]=gguf [sweep_config]=json [spec]=spec [tokenizer]=json
  [model_folder]=json [profile]=json [shard]=json [journal]=json)
build=${TQLAB_FUZZ_BUILD_DIR:-build-fuzz}
if [ "${TQLAB_FUZZ_SKIP_BUILD:-0}" != 1 ]; then
  # -O1 -g: the sanitizers' usual level. No tests or benchmarks: only the fuzz targets are built.
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja "${launcher[@]}" -DTQLAB_FUZZ=ON -DBUILD_TESTING=OFF \
    -DTQLAB_BUILD_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
  cmake --build "$build" -j "$(nproc)" --target fuzz_targets
fi
mkdir -p $build/fuzz-logs

run_one() {
  local name=$1
  local work=$build/fuzz-work/$name findings=$build/fuzz-findings/$name
  mkdir -p "$work" "$findings"
  # -timeout: one input may take 10 s (the slowest seed takes well under 1 s);
  # -rss_limit_mb / -malloc_limit_mb: a file of a few kB must not make the parser allocate gigabytes.
  if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$build/tests/fuzz/fuzz_$name" "$work" "tests/fuzz/corpus/$name" \
      -dict="tests/fuzz/dict/${dict[$name]}.dict" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$findings/" >"$build/fuzz-logs/$name.log" 2>&1; then
    echo "fuzz $name: FAILED (log: $build/fuzz-logs/$name.log, input in $findings/)" >&2
    grep -E "ERROR|FINDING|runtime error|Timeout|out-of-memory|SUMMARY" "$build/fuzz-logs/$name.log" | head -5 >&2 || true
    return 1
  fi
  echo "fuzz $name: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$build/fuzz-logs/$name.log" | tail -1)"
  if [ $merge = 1 ]; then
    "$build/tests/fuzz/fuzz_$name" -merge=1 "tests/fuzz/corpus/$name" "$work" \
      -dict="tests/fuzz/dict/${dict[$name]}.dict" -max_len=65536 >"$build/fuzz-logs/$name.merge.log" 2>&1
    echo "fuzz $name: merged, corpus now $(ls "tests/fuzz/corpus/$name" | wc -l) files"
  fi
}

status=0
running=0
for name in "${targets[@]}"; do
  run_one "$name" &
  running=$((running + 1))
  if [ $running -ge "$jobs" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
done
while [ $running -gt 0 ]; do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
