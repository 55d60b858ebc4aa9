#!/usr/bin/env bash
# README quick start 1: install, build the tqlab binary (only what the demo runs; the test
# command builds the tests and benchmarks), then run the main job on the bundled sample data:
# synthetic KV tensors, then the quickstart sweep over them (results/quickstart.json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
BUILD_TARGET=tqlab bash tools/build.sh
./build/tqlab synth -o data/sample_kv.safetensors
./build/tqlab sweep --config configs/quickstart.json
# End to end: the bundled trained model with a 3-bit KV cache against an exact one.
./build/tqlab ppl --model data/tinyllama_hf --text /usr/share/common-licenses/GPL-3 --ctx 256 --chunks 16 \
  --k tq:b=3,nc --v tq:b=3,nc
