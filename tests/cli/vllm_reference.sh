# vLLM's KV cache formats against a numpy re-implementation written from vLLM's source
# (tools/vllm_reference.py): the real dump tinyllama_qkv.safetensors of the shared data folder, in float32, plus a
# layer of adversarial rows (zero, constant, beyond fp8's 448, below the per-token-head scale floor,
# ties), through `tqlab roundtrip` with every key and value spec vLLM's presets use
# (src/quant/vllm_presets.h), then compared with the reference's decoded vectors. Values and fp8 must
# agree exactly; keys to 1e-5 of their norm, a rotated coordinate on a decision boundary excepted.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- *.safetensors *.txt
require_numpy "the reference is numpy"
require_real_dump
reference="$(cd "$(dirname "$0")/../.." && pwd)/tools/vllm_reference.py"
"$python" "$reference" prepare "$dump" in.safetensors >prepare.txt 2>&1 ||
  { echo "FAIL: preparing the input: $(tail -3 prepare.txt)"; exit 1; }

# Each line: a key spec and a value spec; together they cover every spec of every preset.
while read -r k v; do
  expect_exit 0 "roundtrip --k $k --v $v" -- \
    "$TQLAB" roundtrip in.safetensors -o out.safetensors --k "$k" --v "$v" --quiet
  checks=$((checks + 1))
  "$python" "$reference" check in.safetensors out.safetensors "$k" "$v" >check.txt 2>&1 ||
    fail "--k $k --v $v disagrees with vLLM's numpy reference: $(grep -m5 -e MISMATCH -e Error check.txt)"
  cat check.txt
done <<'SPECS'
vllm_tq_key:b=4,nc vllm_uniform:b=4
vllm_tq_key:b=3,nc vllm_uniform:b=3
vllm_tq_key:b=3 vllm_fp8
vllm_fp8:scale=token_head vllm_fp8:scale=token_head
SPECS

finish
