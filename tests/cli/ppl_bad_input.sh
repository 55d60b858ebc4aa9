# Every bad input of tqlab ppl and tqlab dump through the real binary: exit 2, nothing on stdout,
# exactly one stderr line naming the folder, file, tensor, key or option and what was found, and no
# output file left behind. The broken checkpoints are variants of tools/make_checkpoints.py's
# llama_sharded and mistral, each with one defect.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- bad models *.npy *.json *.safetensors *.txt
repo="$(cd "$(dirname "$0")/../.." && pwd)"
tiny="$repo/data/tinyllama_hf"
windows="$tiny/windows.npy"
require_numpy "the broken checkpoints and token files are written with numpy"
"$python" "$repo/tools/make_checkpoints.py" models --only llama_sharded,mistral,llama_linear ||
  { echo "FAIL: make_checkpoints.py failed"; exit 1; }

# A copy of a variant with one change, made by a few lines of Python with make_checkpoints' helpers.
mkdir -p bad
edit() {  # edit NAME SOURCE PYTHON: copies models/SOURCE to bad/NAME, then runs PYTHON with `d` = that folder
  rm -rf "bad/$1" && cp -r "models/$2" "bad/$1"
  "$python" - "bad/$1" "$repo/tools" <<PY || { echo "FAIL: could not make bad/$1"; exit 1; }
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import numpy as np
import make_checkpoints as mc
d = Path(sys.argv[1])
$3
PY
}

# ---------------------------------------------------------------- the model folder
expect_refused "no such folder" "model 'nowhere'" "not a folder" -- "$TQLAB" ppl --model nowhere --tokens "$windows"
mkdir -p empty
expect_refused "no config.json" "model 'empty'" "no config.json" -- "$TQLAB" ppl --model empty --tokens "$windows"
edit not_json llama_sharded '(d / "config.json").write_text("{ not json")'
expect_refused "config not JSON" "bad/not_json/config.json" "not valid JSON" -- "$TQLAB" ppl --model bad/not_json --tokens "$windows"
edit gpt2 llama_sharded 'c = json.loads((d / "config.json").read_text()); c["architectures"] = ["GPT2LMHeadModel"]; (d / "config.json").write_text(json.dumps(c))'
expect_refused "another architecture" "architectures[0]" '"GPT2LMHeadModel" is not supported' "LlamaForCausalLM" "Qwen3ForCausalLM" -- \
  "$TQLAB" ppl --model bad/gpt2 --tokens "$windows"
edit gelu llama_sharded 'c = json.loads((d / "config.json").read_text()); c["hidden_act"] = "gelu"; (d / "config.json").write_text(json.dumps(c))'
expect_refused "hidden_act gelu" "hidden_act" '"gelu" is not supported (supported: silu)' -- "$TQLAB" ppl --model bad/gelu --tokens "$windows"
edit yarn llama_sharded 'c = json.loads((d / "config.json").read_text()); c["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0}; (d / "config.json").write_text(json.dumps(c))'
expect_refused "rope type yarn" "rope_scaling.rope_type" '"yarn" is not supported (supported: default, linear, llama3)' -- \
  "$TQLAB" ppl --model bad/yarn --tokens "$windows"
edit no_weights llama_sharded 'import os; [os.remove(p) for p in d.glob("*.safetensors*")]'
expect_refused "no weights" "model 'bad/no_weights'" "no model.safetensors or model.safetensors.index.json" -- \
  "$TQLAB" ppl --model bad/no_weights --tokens "$windows"
edit lost_shard llama_sharded '(d / "model-00002-of-00003.safetensors").unlink()'
expect_refused "a shard is missing" "shard 'model-00002-of-00003.safetensors' does not exist" -- \
  "$TQLAB" ppl --model bad/lost_shard --tokens "$windows"
single() {  # a single-file variant of llama_sharded whose tensors pass through PYTHON first (list `t` of name, dtype, shape, bytes)
  edit "$1" llama_sharded "
c = json.loads((d / 'config.json').read_text())
rng = np.random.default_rng(3)
t = [(n, 'F32', s, mc.encode(mc.random_tensor(n, s, rng), 'F32')) for n, s in mc.tensor_shapes(c)]
$2
import os; [os.remove(p) for p in d.glob('*.safetensors*')]
mc.write_safetensors(d / 'model.safetensors', t)"
}
single missing 't = [x for x in t if x[0] != "model.layers.1.self_attn.v_proj.weight"]'
expect_refused "a tensor is missing" "tensor 'model.layers.1.self_attn.v_proj.weight' is missing" "expected shape [64, 128]" -- \
  "$TQLAB" ppl --model bad/missing --tokens "$windows"
single extra 't.append(("model.layers.0.mlp.extra.weight", "F32", (2, 2), bytes(16)))'
expect_refused "an extra tensor" "tensor 'model.layers.0.mlp.extra.weight' (shape [2, 2]" "is not part of a LlamaForCausalLM" -- \
  "$TQLAB" ppl --model bad/extra --tokens "$windows"
single misshaped 't = [(n, d_, (s[0] + 1, s[1]) if n == "model.layers.0.mlp.up_proj.weight" else s, mc.encode(mc.random_tensor(n, (s[0] + 1, s[1]) if n == "model.layers.0.mlp.up_proj.weight" else s, rng), "F32")) for n, d_, s, b in t]'
expect_refused "a misshaped tensor" "tensor 'model.layers.0.mlp.up_proj.weight'" "has shape [193, 128]; expected [192, 128]" -- \
  "$TQLAB" ppl --model bad/misshaped --tokens "$windows"
single int8 't = [(n, "I8", s, bytes(len(b) // 4)) if n == "model.layers.0.self_attn.q_proj.weight" else (n, d_, s, b) for n, d_, s, b in t]'
expect_refused "an integer weight" "tensor 'model.layers.0.self_attn.q_proj.weight'" "is I8; weights must be F32, F16 or BF16" -- \
  "$TQLAB" ppl --model bad/int8 --tokens "$windows"
single nan_weights 't = [(n, d_, s, np.full(s, np.nan, dtype="<f4").tobytes()) if n == "model.layers.1.mlp.down_proj.weight" else (n, d_, s, b) for n, d_, s, b in t]'
expect_refused "NaN weights make NaN logits" "model 'bad/nan_weights'" "logits at chunk 0, position 128 are not finite" -- \
  "$TQLAB" ppl --model bad/nan_weights --tokens "$windows" --ctx 256
# Keys of 1e5 and more: float32 attention takes them, an fp16 cache cannot hold them.
single huge_keys 't = [(n, d_, s, mc.encode(1e5 * mc.random_tensor(n, s, rng), "F32")) if n == "model.layers.1.self_attn.k_proj.weight" else (n, d_, s, b) for n, d_, s, b in t]'
expect_refused "keys an fp16 cache cannot hold" "model 'bad/huge_keys', chunk 0, layer 1, kv head" "keys" -- \
  "$TQLAB" ppl --model bad/huge_keys --tokens "$windows" --ctx 256 --k fp16
expect_refused "a sliding window shorter than ctx" "--ctx 128 exceeds the sliding window of 96 tokens" "use --ctx 96 or less" -- \
  "$TQLAB" ppl --model models/mistral --tokens "$windows" --ctx 128
expect_refused "dump refuses the sliding window too" "--ctx 128 exceeds the sliding window of 96 tokens" -- \
  "$TQLAB" dump --model models/mistral --tokens "$windows" --ctx 128 -o never.safetensors

# ---------------------------------------------------------------- the tokens
"$python" - <<'PY'
import numpy as np
np.save("big_id.npy", np.array([10, 65, 300, 66] * 100, dtype=np.int32))
np.save("negative.npy", np.array([10, -1] * 200, dtype=np.int64))
np.save("floats.npy", np.arange(512, dtype=np.float32))
np.save("short.npy", np.arange(100, dtype=np.uint8))
np.save("matrix.npy", np.zeros((4, 256), dtype=np.int32))
np.save("ok16.npy", np.arange(512, dtype=np.uint16) % 256)
PY
expect_refused "an id past the vocabulary" "--tokens 'big_id.npy': token 2 of 400 is 300" "outside the model's vocabulary (ids 0..255)" -- \
  "$TQLAB" ppl --model "$tiny" --tokens big_id.npy --ctx 64
expect_refused "a negative id" "token 1 of 400 is -1" -- "$TQLAB" ppl --model "$tiny" --tokens negative.npy --ctx 64
expect_refused "a float token file" "--tokens 'floats.npy' holds f32 values; token ids must be integers" -- \
  "$TQLAB" ppl --model "$tiny" --tokens floats.npy --ctx 64
expect_refused "fewer tokens than one chunk" "--tokens 'short.npy' holds 100 tokens, fewer than one chunk of --ctx 256" -- \
  "$TQLAB" ppl --model "$tiny" --tokens short.npy --ctx 256
expect_refused "dump: fewer tokens than one chunk" "holds 100 tokens, fewer than one chunk of --ctx 256" -- \
  "$TQLAB" dump --model "$tiny" --tokens short.npy --ctx 256 -o never.safetensors
expect_refused "a 2-D npy" "--tokens 'matrix.npy' holds a [4, 256] array; token ids must be 1-D" -- \
  "$TQLAB" ppl --model "$tiny" --tokens matrix.npy --ctx 64
expect_refused "more chunks than the tokens hold" "--chunks 9 needs 2304 tokens at --ctx 256" "holds 2048 (8 whole chunks)" -- \
  "$TQLAB" ppl --model "$tiny" --tokens "$windows" --ctx 256 --chunks 9
expect_exit 0 "dump for the safetensors token cases" -- "$TQLAB" dump --model "$tiny" --tokens ok16.npy --ctx 256 --layers 0 \
  -o dumped.safetensors --quiet
expect_refused "a safetensors file of several tensors without :NAME" "--tokens 'dumped.safetensors' holds 4 tensors; name the token ids as FILE:NAME" -- \
  "$TQLAB" ppl --model "$tiny" --tokens dumped.safetensors --ctx 64
expect_refused "a safetensors tensor that is not there" "'dumped.safetensors'" "no_such_ids" -- \
  "$TQLAB" ppl --model "$tiny" --tokens dumped.safetensors:no_such_ids --ctx 64
expect_refused "a float tensor as token ids" "tensor 'layers.0.k' holds f16 values; token ids must be integers" -- \
  "$TQLAB" ppl --model "$tiny" --tokens dumped.safetensors:layers.0.k --ctx 64
expect_refused "a missing token file" "'nothing.npy'" -- "$TQLAB" ppl --model "$tiny" --tokens nothing.npy

# ---------------------------------------------------------------- the options
expect_refused "an unknown spec" "--k: 'tq:b=9'" -- "$TQLAB" ppl --model "$tiny" --tokens "$windows" --ctx 64 --k tq:b=9 --v tq:b=3
expect_refused "a spec that cannot take the head dim" "--k: 'q4_0' for the head dim 40" -- \
  "$TQLAB" ppl --model models/mistral --tokens "$windows" --ctx 64 --k q4_0
expect_refused "a bad score" "--score" "second-half" -- "$TQLAB" ppl --model "$tiny" --tokens "$windows" --score third
expect_refused "a bad window mode" "--window-mode" -- "$TQLAB" ppl --model "$tiny" --tokens "$windows" --window-mode middle
expect_refused "bad seeds" "ppl: --seeds '0,x': 'x' is not a seed" -- "$TQLAB" ppl --model "$tiny" --tokens "$windows" --seeds 0,x
expect_refused "repeated seeds" "seed 1 is listed twice" -- "$TQLAB" ppl --model "$tiny" --tokens "$windows" --seeds 1,1
expect_refused "a chunk of one token" "--ctx 1: a chunk needs at least 2 tokens" -- "$TQLAB" ppl --model "$tiny" --tokens "$windows" --ctx 1
expect_refused "negative threads" "--threads: -1 is out of range (expected 0..65536)" -- "$TQLAB" ppl --model "$tiny" --tokens "$windows" --threads -1
expect_refused "negative window" "--window -4 is negative" -- "$TQLAB" ppl --model "$tiny" --tokens "$windows" --window -4
edit no_bos llama_linear 'c = json.loads((d / "config.json").read_text()); c.pop("bos_token_id"); (d / "config.json").write_text(json.dumps(c))'
expect_refused "--bos without a bos_token_id" "--bos: 'bad/no_bos/config.json' has no bos_token_id" -- \
  "$TQLAB" ppl --model bad/no_bos --tokens ok16.npy --ctx 64 --bos
expect_refused "an output folder that does not exist" "the folder 'no/such' does not exist" -- \
  "$TQLAB" ppl --model "$tiny" --tokens "$windows" -o no/such/out.json
expect_refused "dump to another format" "a KV dump is written as .safetensors" -- \
  "$TQLAB" dump --model "$tiny" --tokens "$windows" -o kv.npz
expect_refused "dump of a layer the model lacks" "--layers: the model has layers 0..3, not 7" -- \
  "$TQLAB" dump --model "$tiny" --tokens "$windows" --ctx 256 --layers 2,7 -o never.safetensors
expect_refused "dump in fp8" "--dtype" -- "$TQLAB" dump --model "$tiny" --tokens "$windows" --dtype f8 -o never.safetensors
expect_refused "dump over its own tokens" "is the token file" -- "$TQLAB" dump --model "$tiny" --tokens dumped.safetensors:input_ids \
  -o dumped.safetensors

# Nothing half-written: no failed command left an output or a temporary file.
ls never.safetensors kv.npz no 2>/dev/null && fail "a failed command left an output behind"
ls ./*.tmp-* 2>/dev/null && fail "a failed command left a temporary file behind"
finish
