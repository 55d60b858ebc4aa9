#!/usr/bin/env bash
# Prefill on GGUF files, tqlab against llama.cpp, as key=value lines:
#   checkpoint  a random-weight Llama of TinyLlama-1.1B's shape (22 layers, hidden 2048, MLP 5632, 32
#               query and 4 key/value heads, vocabulary 32000; 1.10 G parameters), written in F16 by
#               tools/make_checkpoints.py --big, then converted by tools/hf_to_gguf.py to F16, Q8_0 and
#               Q4_K_M GGUFs (llama-quantize's mix: Q4_K, with Q6_K for the output and for attn_v and
#               ffn_down in half the layers; K-quants by ggml's own quantizer in the pinned
#               node-llama-cpp's libggml-base; q4_k, pure Q4_K, on request);
#               the byte-level tokenizer.json of data/tinyllama_hf goes with it (ids 256 and up are
#               named [PADn] by the converter; both programs read token ids, never text)
#   TYPE_ctxN_tT  for each weight type, ctx 512 (2 chunks) and 2048 (1 chunk), 1 and 2 threads, one
#               run of each program on the same file and the same token ids (uniform below the
#               vocabulary, numpy seed 29), side by side:
#                 tqlab     build/tqlab ppl --model FILE.gguf (exact fp32 cache). It makes TWO forwards
#                           per chunk: the base pass, then the run through the cache hook (with no
#                           --k/--v that run is fp32, the exact cache again; src/model/end_to_end.cpp,
#                           src/sweep/sweep_runner.cpp). Both are counted: 2 x ctx x chunks tokens.
#                           run_over_base is the run pass's wall time over the base pass's (the
#                           timing of its JSON document): near 1, two whole forwards
#                 llamacpp  tools/llamacpp_reference/perplexity.mjs --threads T (llama.cpp through
#                           node-llama-cpp: flash attention, f16 cache, the chunk in one batch): ONE
#                           forward per chunk, ctx x chunks tokens
#               tokens_per_cpu_s is prefill tokens per CPU-second (user + system, /usr/bin/time -v)
#               net of start-up: (tokens - tokens of a start-up run) / (CPU s - CPU s of the start-up
#               run), the start-up run being the same program, file and threads on one 4-token chunk
#               (process and node start, load, mapping and first touch of every weight; llama.cpp's
#               repacking of Q4_K and Q6_K for its CPU kernels). startup_cpu_s is that run's CPU time, cpu_s and
#               wall_s the whole measured run's. Scoring stays in: tqlab's logits and log-softmax of the
#               scored half (three output products per scored row over both passes), and node's
#               per-row log-softmax over the vocabulary in JavaScript (perplexity.mjs)
#               ratio: tqlab's tokens_per_cpu_s over llama.cpp's
#               peak_rss_mib: peak resident memory of the measured run (/usr/bin/time -v; mapped file
#               pages it touched count), beside the GGUF's size (gguf_mib) as rss_over_file
# Rates are per second of CPU time (the machine is shared; wall times are printed beside them). One
# repetition. OpenBLAS runs its Haswell kernels on one thread per worker, as tqlab does
# (src/cli/blas_kernels.h).
# The full run takes tens of minutes on two cores. The conversion holds the whole checkpoint as float64
# (tools/reference_forward.py read_weights): about 12 GB of memory at the default size.
# Usage: tools/bench_gguf.sh [--build DIR] [--work DIR] [--small] [--types LIST] [--threads LIST] [--ctx LIST]
#                            [--short-chunks N]
#   --work DIR   where the checkpoint, GGUFs and tokens go, kept and reused (default: a temporary folder,
#                removed at the end; about 6 GiB)
#   --small      a tiny shape (2 layers, hidden 256, MLP 512, 4/2 heads, vocabulary 512) at ctx 64 (2
#                chunks) and 128 (1 chunk): a check of the script in seconds, its figures meaningless
#   --types "f16 q8_0 q4_k_m", --threads "1 2", --ctx "512 2048" (the default lists): a part of the table
#   --short-chunks N   chunks at the short ctx (default 2; the long ctx runs 1)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
work=""
small=0
types="f16 q8_0 q4_k_m"
thread_list="1 2"
ctx_list=""
short_chunks=2
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --small) small=1; shift ;;
    --types) types=$2; shift 2 ;;
    --threads) thread_list=$2; shift 2 ;;
    --ctx) ctx_list=$2; shift 2 ;;
    --short-chunks) short_chunks=$2; shift 2 ;;
    -h|--help) sed -n '2,44p' "$0"; exit 0 ;;
    *) echo "bench_gguf.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
python=/usr/bin/python3
reference=tools/llamacpp_reference
ggml=$reference/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so
node=$(command -v node || true)
if [ -z "$node" ] || [ ! -f "$ggml" ]; then
  echo "bench_gguf.sh: needs nodejs and $reference/node_modules (run tools/install_deps.sh)" >&2
  exit 1
fi
[ -x "$build/tqlab" ] || BUILD_DIR=$build bash tools/build.sh
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
export OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1
note() { echo "bench_gguf.sh: $*" >&2; }

if [ "$small" = 1 ]; then
  shape=(--layers 2 --hidden 256 --intermediate 512 --heads 4 --kv-heads 2 --vocab 512)
  vocab=512 ctx_short=64 ctx_long=128
else
  shape=(--layers 22 --hidden 2048 --intermediate 5632 --heads 32 --kv-heads 4 --vocab 32000)
  vocab=32000 ctx_short=512 ctx_long=2048
fi
echo "cpu=$(lscpu | sed -n 's/^Model name: *//p')"
echo "commit=$(git rev-parse --short HEAD)$(git diff --quiet || echo +dirty)"

model=$work/llama_${shape[1]}x${shape[3]}
if [ ! -f "$model/model.safetensors" ]; then
  rm -rf "$model.partial"
  "$python" tools/make_checkpoints.py "$model.partial" --big "${shape[@]}" --dtype F16 >&2
  cp data/tinyllama_hf/tokenizer.json "$model.partial/"
  mv "$model.partial" "$model"
fi
"$python" - "$model" <<'PY'
import json, sys
c = json.load(open(sys.argv[1] + "/config.json"))
h, i, v, layers = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["num_hidden_layers"]
kv = h // c["num_attention_heads"] * c["num_key_value_heads"]
params = 2 * v * h + h + layers * (2 * h * h + 2 * h * kv + 3 * h * i + 2 * h)
print(f"checkpoint: params_m={params / 1e6:.1f} layers={layers} hidden={h} intermediate={i} "
      f"heads={c['num_attention_heads']} kv_heads={c['num_key_value_heads']} vocab={v}")
PY

tokens=$work/tokens_${vocab}.npy
"$python" -c "
import numpy as np, sys
np.save(sys.argv[1], np.random.default_rng(29).integers(0, int(sys.argv[2]), int(sys.argv[3])).astype(np.int32))
" "$tokens" "$vocab" "$((ctx_short * 2 > ctx_long ? ctx_short * 2 : ctx_long))"

# measure NAME CMD...: runs CMD under /usr/bin/time -v into $work/NAME.{time,out,err}.
measure() {
  local name=$1
  shift
  /usr/bin/time -v -o "$work/$name.time" "$@" >"$work/$name.out" 2>"$work/$name.err" ||
    { note "failed: $*"; cat "$work/$name.err" >&2; exit 1; }
}

[ -n "$ctx_list" ] || ctx_list="$ctx_short $ctx_long"
for type in $types; do
  gguf=$model.$type.gguf
  if [ ! -f "$gguf" ]; then
    note "converting to $type ..."
    measure "convert_$type" "$python" tools/hf_to_gguf.py "$model" "$gguf" --dtype "$type" --ggml "$ggml"
    note "$type converted: $(sed -n 's/^\s*Elapsed (wall clock) time (h:mm:ss or m:ss): /wall /p
      s/^\s*Maximum resident set size (kbytes): /peak_rss_kib /p' "$work/convert_$type.time" | tr '\n' ' ')"
  fi
  for threads in $thread_list; do
    measure "tqlab_${type}_t${threads}_startup" "$build/tqlab" ppl --model "$gguf" --tokens "$tokens" --ctx 4 --chunks 1 \
      --threads "$threads" --quiet
    measure "llamacpp_${type}_t${threads}_startup" "$node" "$reference/perplexity.mjs" "$gguf" "$tokens" --ctx 4 \
      --chunks 1 --threads "$threads"
    for ctx in $ctx_list; do
      chunks=$([ "$ctx" = "$ctx_short" ] && echo "$short_chunks" || echo 1)
      name=${type}_ctx${ctx}_t${threads}
      note "$name ..."
      measure "tqlab_$name" "$build/tqlab" ppl --model "$gguf" --tokens "$tokens" --ctx "$ctx" --chunks "$chunks" \
        --threads "$threads" --quiet -o "$work/tqlab_$name.json"
      measure "llamacpp_$name" "$node" "$reference/perplexity.mjs" "$gguf" "$tokens" --ctx "$ctx" --chunks "$chunks" \
        --threads "$threads"
      "$python" - "$work" "$name" "$type" "$threads" "$ctx" "$chunks" "$(stat -c %s "$gguf")" <<'PY'
import json, re, sys
work, name, kind, threads, ctx, chunks, size = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:])

def usage(stem):
    """(CPU seconds, wall seconds, peak RSS bytes) of a /usr/bin/time -v report."""
    text = open(f"{work}/{stem}.time").read()
    field = lambda label: re.search(r"^\s*" + re.escape(label) + r": (.*)$", text, re.M).group(1)
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    clock = field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
    wall = sum(float(part) * 60 ** k for k, part in enumerate(reversed(clock)))
    return cpu, wall, int(field("Maximum resident set size (kbytes)")) * 1024

def rate(tokens, startup_tokens, cpu, startup_cpu):
    return (tokens - startup_tokens) / (cpu - startup_cpu) if cpu > startup_cpu else float("nan")

mib = lambda b: b / 2**20
fields = {}
rates = {}
for program, forwards in (("tqlab", 2), ("llamacpp", 1)):
    cpu, wall, rss = usage(f"{program}_{name}")
    startup_cpu = usage(f"{program}_{kind}_t{threads}_startup")[0]
    tokens = forwards * ctx * chunks
    rates[program] = rate(tokens, forwards * 4, cpu, startup_cpu)
    fields[program] = (f"{program}_tokens={tokens} {program}_tokens_per_cpu_s={rates[program]:.1f} "
                       f"{program}_cpu_s={cpu:.2f} {program}_startup_cpu_s={startup_cpu:.2f} {program}_wall_s={wall:.2f} "
                       f"{program}_peak_rss_mib={mib(rss):.0f} {program}_rss_over_file={rss / size:.3f}")
model_seconds = json.load(open(f"{work}/tqlab_{name}.json"))["timing"]["model_seconds"]
print(f"{name}: {fields['tqlab']} tqlab_run_over_base={model_seconds['runs'] / model_seconds['base']:.2f} "
      f"{fields['llamacpp']} ratio={rates['tqlab'] / rates['llamacpp']:.3f} gguf_mib={mib(size):.0f}")
PY
    done
  done
done
