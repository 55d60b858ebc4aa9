# tqlab's perplexity on GGUF files with quantized weights against llama.cpp's own on the same files
# (node-llama-cpp's CPU libraries, tools/llamacpp_reference/perplexity.mjs). Both sides run
# llama.cpp's f16 cache (`--engine llama.cpp --k f16 --v f16`), so what remains is the weights'
# products: tqlab multiplies float32 activations by the decoded weights, llama.cpp's CPU kernels
# first convert the activations to f16 or bf16 (F16, BF16 weights), q8_0 (Q8_0, Q4_0) or q8_K (Q4_K,
# Q6_K). The files: tools/hf_to_gguf.py (q4_k_m: llama-quantize's Q4_K_M mix of Q4_K and Q6_K, with
# the F16 fallback for rows not a multiple of 256), Q4_K and Q6_K quantized by ggml's own quantizer in the
# package's libggml-base; each is also written as the Hugging Face folder of its decoded weights
# (ggml's dequantize_row_*), on which tqlab must give the GGUF's perplexity to 1e-6. The residual
# against llama.cpp per weight type is bounded here (about 2.5x to 4x what was measured: F32 4.6e-6,
# F16 9.9e-6, BF16 4.0e-4, Q8_0 3.4e-4, Q4_0 1.1e-4, Q4_K 7.7e-4, Q6_K 3.9e-4) and stated in
# docs/SOURCES.md (GGUF), on 2 windows of 128 tokens of the bundled model.
#
# The npm package is a test dependency tools/install_deps.sh installs: when it or Debian's nodejs
# is missing this test FAILS (it does not skip).
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
require_references llamacpp_reference/node_modules/node-llama-cpp
reference="$repo/tools/llamacpp_reference"
model="$repo/data/tinyllama_hf"
tokens="$model/windows.npy"

ggml="$reference/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so"

for case in f32:2e-5 f16:5e-5 bf16:1.5e-3 q8_0:1.5e-3 q4_0:1.5e-3 q4_k:2e-3 q6_k:2e-3 q4_k_m:2e-3; do
  dtype=${case%%:*} tolerance=${case#*:}
  "$python" "$repo/tools/hf_to_gguf.py" "$model" "$dtype.gguf" --dtype "$dtype" --ggml "$ggml" \
    --dequantized "decoded_$dtype" || { fail "hf_to_gguf.py --dtype $dtype failed"; continue; }
  expect_exit 0 "ppl on decoded_$dtype" -- "$TQLAB" ppl --model "decoded_$dtype" --tokens "$tokens" --ctx 128 \
    --chunks 2 --engine llama.cpp --k f16 --v f16 -o "decoded_$dtype.json" --quiet
  "$node" "$reference/perplexity.mjs" "$dtype.gguf" "$tokens" --ctx 128 --chunks 2 >"llamacpp_$dtype.json" ||
    { fail "llama.cpp's perplexity.mjs failed on $dtype.gguf"; continue; }
  expect_exit 0 "ppl --engine llama.cpp on $dtype.gguf" -- "$TQLAB" ppl --model "$dtype.gguf" --tokens "$tokens" \
    --ctx 128 --chunks 2 --engine llama.cpp --k f16 --v f16 -o "tqlab_$dtype.json" --quiet
  checks=$((checks + 1))
  "$python" - "tqlab_$dtype.json" "llamacpp_$dtype.json" "$tolerance" "$dtype" <<'PY' || fail "$dtype: see above"
import json, sys
ppl = lambda path: json.load(open(path))["runs"][0]["metrics"]["e2e_ppl"]["mean"]
ours, decoded = ppl(sys.argv[1]), ppl("decoded_" + sys.argv[4] + ".json")
theirs = json.load(open(sys.argv[2]))["base"]["ppl"]
tolerance = float(sys.argv[3])
residual = abs(ours - theirs) / theirs
print(f"{sys.argv[4]} weights: tqlab {ours!r} (decoded folder {decoded!r}) llama.cpp {theirs!r} "
      f"relative {residual:.2e} (bound {tolerance:g})")
sys.exit(residual > tolerance or abs(ours - decoded) > 1e-6 * decoded)
PY
done
finish
