#!/usr/bin/env bash
# Regenerates every committed results file: each config in configs/ on the synthetic sample
# (results/NAME.json) and, when a real dump is given, on it too (results/NAME.tinyllama.json; the
# committed ones come from a small Llama-style model, head dim 64, 4 layers, 8 sequences of 256
# tokens, which is not part of the repository). Then each config in configs/e2e/ end to end on the
# bundled model (results/NAME.e2e.json), over the Debian text tools/make_e2e_text.sh writes; that is
# about 50 runs x 3 seeds of 64 chunks, 10-25 minutes on 2 cores. E2E_ONLY=1 makes only those.
# Usage: [BUILD_DIR=build] [E2E_ONLY=1] tools/make_results.sh [REAL_DUMP.safetensors]
# Run after any change that moves numbers, and commit the results with that change.
set -euo pipefail
cd "$(dirname "$0")/.."
real=${1:-}
# Always (re)build the binary (the tests are not needed here): results made by a stale binary would be
# committed as the new code's.
build_dir=${BUILD_DIR:-build}
BUILD_DIR=$build_dir BUILD_TARGET=tqlab bash tools/build.sh >/dev/null
tqlab=$build_dir/tqlab
[ -f data/sample_kv.safetensors ] || "$tqlab" synth -o data/sample_kv.safetensors
[ "${E2E_ONLY:-0}" = 1 ] || for config in configs/*.json; do
  name=$(basename "$config" .json)
  case $name in allocate_*) continue ;; esac  # tqlab allocate's configs: below
  echo "== $name (synthetic sample)"
  "$tqlab" sweep --config "$config" --quiet --out "results/$name.json"
  if [ "$name" != quickstart ] && [ -n "$real" ]; then
    echo "== $name ($real)"
    "$tqlab" sweep --config "$config" --quiet --data "$real" --out "results/$name.tinyllama.json"
  fi
done
[ "${E2E_ONLY:-0}" = 1 ] || [ -n "$real" ] || echo "note: no real dump given: only the synthetic results were made"
bash tools/make_e2e_text.sh
for config in configs/e2e/*.json; do
  name=$(basename "$config" .json)
  echo "== $name (end to end, data/tinyllama_hf)"
  "$tqlab" sweep --config "$config" --quiet --out "results/$name.e2e.json"
done
/usr/bin/python3 tools/e2e_findings.py > results/e2e_findings.md
# The engines' own caches against TurboQuant (docs/FINDINGS.md#turboquant-against-what-the-engines-ship).
for config in configs/engines/*.json; do
  name=$(basename "$config" .json)
  echo "== $name (end to end, data/tinyllama_hf)"
  "$tqlab" sweep --config "$config" --quiet --out "results/$name.e2e.json"
done
# tqlab allocate at the bits of uniform tq:b=3,nc (docs/FINDINGS.md#where-the-bits-go-tqlab-allocate):
# the offline profile on the sample (and the real dump), the model profile on the bundled model,
# and the offline profile of the model's own Q/K/V calibrated to it.
allocate=("$tqlab" allocate --budget tq:b=3,nc --verify --no-cache --quiet)
echo "== allocate (synthetic sample)"
"${allocate[@]}" --config configs/allocate_sample.json -o results/allocate_sample.json >/dev/null
if [ -n "$real" ]; then
  echo "== allocate ($real)"
  "${allocate[@]}" --config configs/allocate_sample.json --data "$real" -o results/allocate_sample.tinyllama.json \
    >/dev/null
fi
echo "== allocate (data/tinyllama_hf, model profile)"
"${allocate[@]}" --config configs/allocate_tinyllama.json -o results/allocate_tinyllama.json >/dev/null
echo "== allocate (data/tinyllama_hf, offline profile calibrated to the model's)"
"${allocate[@]}" --config configs/allocate_tinyllama.json --profile offline --calibrate \
  -o results/allocate_tinyllama.offline.json >/dev/null
