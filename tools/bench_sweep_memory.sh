#!/usr/bin/env bash
# Peak memory of a sweep as the dump grows: synthetic fp16 dumps of 8 K/V heads, 32 query heads,
# 2048 tokens, head dim 128 (24 MiB per layer), with L layers each (default: 11 and 44 layers,
# 0.26 and 1.03 GiB), swept with one run (tq:b=3 keys and values, attention and reconstruction,
# no needle) on every core. The sweep maps the dump and gives each layer's pages back when it is
# done, so the peak should not grow with the layer count. Prints one line per dump.
# Usage: tools/bench_sweep_memory.sh [LAYERS...]    (needs about 3 GB of free disk in /tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/tqlab ] || bash tools/build.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/config.json" <<'JSON'
{"name": "memory", "data": {"path": "dump.safetensors"},
 "grid": {"k": ["tq:b=3"], "v": ["tq:b=3"]},
 "metrics": {"needle": false, "attention": {"chunk": 2048}}}
JSON
[ $# -gt 0 ] || set -- 11 44
for layers in "$@"; do
  ./build/tqlab synth -o "$work/dump.safetensors" --layers "$layers" --kv-heads 8 --q-heads 32 --tokens 2048 --dim 128 2>/dev/null
  bytes=$(stat -c %s "$work/dump.safetensors")
  result=$(/usr/bin/python3 tools/peak_rss.py ./build/tqlab sweep --config "$work/config.json" --out "$work/out.json" --quiet 2>&1 >/dev/null | tail -1)
  echo "layers=$layers dump_mib=$((bytes / 1048576)) $result"
done
