#!/usr/bin/env bash
# The sweep end to end (docs/PERFORMANCE.md#the-sweep-end-to-end), on a synthetic dump of 4 layers x 8 KV heads x 32 query
# heads x 2048 tokens x D = 128 (fp16; 65536 key vectors) with 8 runs (keys tq:b=2/3/4 and
# tq:b=4,rot=haar x values tq:b=3/4; reconstruction, attention, needle):
#   - seconds per run per million key vectors, with --threads 1 and --threads 2, and their ratio;
#   - the split between reading, quantization, attention and needle (the results' "timing");
#   - peak RSS of a one-run sweep over 8 and over 32 layers (tools/peak_rss.py): flat if the sweep
#     gives each layer's pages back.
# Prints "key=value" lines (tools/bench.sh reads them). Needs ~1 GB free in $TMPDIR.
# Usage: tools/bench_sweep.sh [--tqlab PATH] [--no-rss | --rss-only]     (default: build/tqlab)
# Takes minutes: on 2 busy cores the 8-run sweep took ~190 s per thread count.
set -euo pipefail
cd "$(dirname "$0")/.."
tqlab=build/tqlab
rss=1
timed=1
while [ $# -gt 0 ]; do
  case "$1" in
    --tqlab) tqlab=$2; shift 2 ;;
    --no-rss) rss=0; shift ;;
    --rss-only) timed=0; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench_sweep.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$tqlab" ] || { echo "bench_sweep.sh: no tqlab binary at $tqlab (build first, or --tqlab PATH)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

layers=4 kv_heads=8 q_heads=32 tokens=2048 dim=128 runs=8
"$tqlab" synth -o "$work/dump.safetensors" --layers $layers --kv-heads $kv_heads --q-heads $q_heads \
  --tokens $tokens --dim $dim >/dev/null 2>&1
cat > "$work/config.json" <<'JSON'
{"name": "bench", "data": {"path": "dump.safetensors"},
 "grid": {"k": ["tq:b=2", "tq:b=3", "tq:b=4", "tq:b=4,rot=haar"], "v": ["tq:b=3", "tq:b=4"]},
 "metrics": {"attention": {"chunk": 2048}}}
JSON
key_vectors=$((layers * kv_heads * tokens))
echo "sweep_shape=${layers}x${kv_heads}x${q_heads}x${tokens}x${dim} runs=$runs key_vectors=$key_vectors"

# One sweep per thread count: wall seconds, the results' phase split, peak RSS.
for threads in $([ "$timed" = 1 ] && echo 1 2); do
  start=$(date +%s.%N)
  /usr/bin/python3 tools/peak_rss.py "$tqlab" sweep --config "$work/config.json" --out "$work/out_$threads.json" \
    --threads "$threads" --quiet 2>"$work/rss_$threads.txt" >/dev/null
  end=$(date +%s.%N)
  /usr/bin/python3 - "$work/out_$threads.json" "$threads" "$start" "$end" "$runs" "$key_vectors" <<'PY'
import json, sys
path, threads, start, end, runs, vectors = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
timing = json.load(open(path))["timing"]
wall = end - start
phases = timing.get("worker_seconds", {})
print(f"sweep_threads{threads}_wall_s={wall:.2f}")
print(f"sweep_threads{threads}_s_per_run_per_mvec={wall / runs / (vectors / 1e6):.3f}")
# The phases are summed over workers (seconds of work, not of wall time).
print("sweep_threads%s_phases_s=%s" % (threads, ",".join(f"{k}:{v:.2f}" for k, v in phases.items())))
PY
  echo "sweep_threads${threads}_$(tail -1 "$work/rss_$threads.txt" | tr ' ' '\n' | grep peak_rss)"
done
[ "$timed" = 1 ] && { cmp -s <(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("timing"); print(json.dumps(d, sort_keys=True))' "$work/out_1.json") \
       <(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("timing"); print(json.dumps(d, sort_keys=True))' "$work/out_2.json") \
  && echo "sweep_threads_identical=yes" || echo "sweep_threads_identical=NO"; }

if [ "$rss" = 1 ]; then
  cat > "$work/one_run.json" <<'JSON'
{"name": "memory", "data": {"path": "dump.safetensors"},
 "grid": {"k": ["tq:b=3"], "v": ["tq:b=3"]},
 "metrics": {"needle": false, "attention": {"chunk": 2048}}}
JSON
  for big in 8 32; do
    "$tqlab" synth -o "$work/dump.safetensors" --layers $big --kv-heads $kv_heads --q-heads $q_heads \
      --tokens $tokens --dim $dim >/dev/null 2>&1
    dump_mib=$(( $(stat -c %s "$work/dump.safetensors") / 1048576 ))
    line=$(/usr/bin/python3 tools/peak_rss.py "$tqlab" sweep --config "$work/one_run.json" --out "$work/mem.json" \
      --quiet 2>&1 >/dev/null | tail -1)
    echo "sweep_rss_layers${big}_dump_mib=$dump_mib sweep_rss_layers${big}_$(echo "$line" | tr ' ' '\n' | grep peak_rss)"
  done
fi
