#!/usr/bin/env bash
# The end-to-end figures of docs/PERFORMANCE.md ("End-to-end forward"), as key=value lines:
#   ceiling   cblas_sgemm 2048^3 on one thread (bench/forward_bench.cpp BM_SgemmCeiling)
#   forward   one chunk of a >= 100 M-parameter random-weight Llama (tools/make_checkpoints.py --big)
#             at ctx 512 and 2048, logits for every position, 1 and 2 threads (BM_Forward):
#             tokens/s and the matrix products' flop rate as a fraction of the ceiling
#   torch     the same forward in Debian's python3-torch (tools/bench_torch_forward.py), same
#             checkpoint and tokens, 1 and 2 threads; its logits against tqlab dump --logits
#   rss       peak resident memory of tqlab ppl (ctx 512, one chunk, a quantized run) on a 2 GiB F32
#             and a 1 GiB BF16 checkpoint, from /usr/bin/time -v, beside the checkpoint's size
# Rates are per second of CPU time (the machine is shared; wall times are printed beside them),
# best of 3 repetitions. OpenBLAS runs its Haswell kernels on one thread per worker, as tqlab does
# (src/cli/blas_kernels.h), for tqlab and torch alike.
# Usage: tools/bench_e2e.sh [--build DIR] [--work DIR] [--no-torch] [--no-rss]
#   --work DIR   where the checkpoints go (default: a temporary folder, removed at the end; about 4 GiB)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=build
work=""
torch=1
rss=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --no-torch) torch=0; shift ;;
    --no-rss) rss=0; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "bench_e2e.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
python=/usr/bin/python3
if [ ! -x "$build/bench/tqlab_bench" ] || [ ! -x "$build/tqlab" ]; then
  BUILD_DIR=$build bash tools/build.sh -DTQLAB_BUILD_BENCHMARKS=ON
fi
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
export OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1
note() { echo "bench_e2e.sh: $*" >&2; }
echo "cpu=$(lscpu | sed -n 's/^Model name: *//p')"
echo "commit=$(git rev-parse --short HEAD)$(git diff --quiet || echo +dirty)"

model=$work/llama125m
[ -f "$model/model.safetensors" ] || "$python" tools/make_checkpoints.py "$model" --big >&2
"$python" -c "
import numpy as np, sys
np.save(sys.argv[1], np.array([(7919 * t + 13) % 32000 for t in range(2048)], dtype=np.int32))" "$work/tokens.npy"

note "sgemm ceiling and the forward (minutes) ..."
TQLAB_BENCH_MODEL=$model "$build/bench/tqlab_bench" --benchmark_filter='BM_SgemmCeiling/2048|BM_Forward' \
  --benchmark_repetitions=3 --benchmark_format=json --benchmark_out="$work/forward.json" --benchmark_out_format=json \
  >/dev/null 2>"$work/forward.err" || { cat "$work/forward.err" >&2; exit 1; }
"$python" - "$work/forward.json" <<'PY'
import json, sys
runs = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("run_type") == "aggregate":
        continue
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
    name = b["run_name"].replace("BM_", "").replace("/iterations:2/real_time", "").replace("/", "_")
    cpu, wall = b["cpu_time"] * scale, b["real_time"] * scale
    if name not in runs or cpu < runs[name][0]:
        runs[name] = (cpu, wall, b["flops_per_forward"])
ceiling = runs["SgemmCeiling_2048"][2] / runs["SgemmCeiling_2048"][0]
print(f"sgemm_ceiling_gflops={ceiling / 1e9:.1f}")
for name, (cpu, wall, flops) in sorted(runs.items()):
    if not name.startswith("Forward"):
        continue
    _, ctx, threads = name.split("_")
    # Google Benchmark's CPU time is the main thread's: with one thread it is the forward's CPU time
    # (time other processes take from the core does not count); with two, only wall time tells.
    if threads == "1":
        print(f"tqlab_ctx{ctx}_t1: cpu_s={cpu:.3f} wall_s={wall:.3f} tokens_per_cpu_s={int(ctx) / cpu:.1f} "
              f"tokens_per_wall_s={int(ctx) / wall:.1f} gflops={flops / cpu / 1e9:.1f} of_ceiling={flops / cpu / ceiling:.3f}")
    else:
        print(f"tqlab_ctx{ctx}_t{threads}: wall_s={wall:.3f} tokens_per_wall_s={int(ctx) / wall:.1f} "
              f"gflops_per_core_wall={flops / wall / int(threads) / 1e9:.1f} of_ceiling_wall={flops / wall / int(threads) / ceiling:.3f}")
PY

if [ "$torch" = 1 ]; then
  if ! "$python" -c 'import torch' 2>/dev/null; then
    note "installing Debian's python3-torch for the comparison"
    DEBIAN_FRONTEND=noninteractive apt-get install -y python3-torch >/dev/null
  fi
  for ctx in 512 2048; do
    for threads in 1 2; do
      # torch's matrix products are OpenBLAS calls: its threads are OpenBLAS's.
      line=$(OPENBLAS_NUM_THREADS=$threads "$python" tools/bench_torch_forward.py "$model" --ctx "$ctx" --threads "$threads" \
        --logits "$work/torch$ctx.npy")
      echo "torch_ctx${ctx}_t${threads}: $line"
    done
    "$build/tqlab" dump --model "$model" --tokens "$work/tokens.npy" --ctx "$ctx" --chunks 1 --layers 0 --dtype f32 \
      --logits -o "$work/dump$ctx.safetensors" --quiet
    "$python" - "$work/dump$ctx.safetensors" "$work/torch$ctx.npy" "$ctx" <<'PY'
import json, struct, sys
import numpy as np
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
entry = json.loads(data[8:8 + n])["logits"]
ours = np.frombuffer(data[8 + n + entry["data_offsets"][0]:8 + n + entry["data_offsets"][1]], dtype="<f4")
ours = ours.reshape(entry["shape"])[0].astype(np.float64)
theirs = np.load(sys.argv[2]).astype(np.float64)
print(f"logits_ctx{sys.argv[3]}_tqlab_vs_torch: max_abs_diff_over_max_abs={np.abs(ours - theirs).max() / np.abs(theirs).max():.2e}")
PY
  done
fi

if [ "$rss" = 1 ]; then
  for dtype in F32 BF16; do
    big=$work/llama500m_$dtype
    [ -f "$big/model.safetensors" ] || "$python" tools/make_checkpoints.py "$big" --big --layers 16 --hidden 1536 \
      --intermediate 4096 --heads 12 --kv-heads 4 --dtype "$dtype" >&2
    bytes=$(stat -c %s "$big/model.safetensors")
    /usr/bin/time -v "$build/tqlab" ppl --model "$big" --tokens "$work/tokens.npy" --ctx 512 --chunks 1 --k tq:b=4 \
      --v tq:b=4 --threads 2 --quiet >/dev/null 2>"$work/time_$dtype.txt"
    peak_kib=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$work/time_$dtype.txt")
    wall=$(sed -n 's/^\s*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time_$dtype.txt")
    "$python" -c "
import sys
bytes, peak = int(sys.argv[1]), int(sys.argv[2]) * 1024
print(f'rss_{sys.argv[3]}: checkpoint_mib={bytes / 2**20:.0f} peak_rss_mib={peak / 2**20:.0f} ratio={peak / bytes:.3f} wall={sys.argv[4]}')
" "$bytes" "$peak_kib" "$dtype" "$wall"
  done
fi
