#!/usr/bin/env bash
# Regenerates every committed results file: each config in configs/ on the synthetic sample
# (results/NAME.json) and, when the team's real dump is present, on it too
# (results/NAME.tinyllama.json: a small Llama-style model, head dim 64, 4 layers, 8 sequences of
# 256 tokens). Usage: tools/make_results.sh [REAL_DUMP.safetensors]
# Run after any change that moves numbers, and commit the results with that change.
set -euo pipefail
cd "$(dirname "$0")/.."
real=${1:-../shared/data/tinyllama_qkv.safetensors}
[ -x build/tqlab ] || bash tools/build.sh
[ -f data/sample_kv.safetensors ] || ./build/tqlab synth -o data/sample_kv.safetensors
for config in configs/*.json; do
  name=$(basename "$config" .json)
  echo "== $name (synthetic sample)"
  ./build/tqlab sweep --config "$config" --quiet --out "results/$name.json"
  if [ "$name" != quickstart ] && [ -f "$real" ]; then
    echo "== $name ($real)"
    ./build/tqlab sweep --config "$config" --quiet --data "$real" --out "results/$name.tinyllama.json"
  fi
done
[ -f "$real" ] || echo "note: $real is absent: only the synthetic results were made"
