#!/usr/bin/env bash
# README quick start 1: install, build, then run the main job on the bundled sample data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
bash tools/build.sh
./build/tqlab synth -o data/sample_kv.safetensors
./build/tqlab inspect data/sample_kv.safetensors
./build/tqlab roundtrip data/sample_kv.safetensors --k tq:b=3 --v tq:b=3 -o data/sample_kv_tq3.safetensors
