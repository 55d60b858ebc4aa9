# tqlab dump under a cache (--k/--v, --engine, --preset, --prefill): the forward runs as tqlab ppl's run of
# the same flags does, and the file says which cache it ran under.
# - the logits of a dump under vLLM's turboquant_4bit_nc (prefill quantized) against those of the exact
#   dump give, token by token, the KL divergence ppl reports for that run (second-half scoring);
# - the first layer's q, k, v are the exact dump's (nothing before it read a cache), a later layer's are
#   not (the layers before it read fp16 and quantized caches);
# - the metadata names the engine, the specs, the prefill and the seed; an exact dump names none;
# - a preset the engine does not take is refused as ppl refuses it.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
require_numpy "tools/make_checkpoints.py writes the model; the checks read the dumps with numpy"
"$python" "$repo/tools/make_checkpoints.py" six --big --layers 6 --hidden 256 --intermediate 256 --heads 4 \
  --kv-heads 2 --vocab 320 >/dev/null || fail "make_checkpoints.py failed"
"$python" -c 'import numpy as np; np.save("tokens.npy", np.random.default_rng(7).integers(0, 320, 640).astype("<i4"))'
common=(--model six --tokens tokens.npy --ctx 320 --chunks 2 --quiet)
cache=(--engine vllm --preset turboquant_4bit_nc --prefill quantized)

expect_exit 0 "exact dump" -- "$TQLAB" dump "${common[@]}" --dtype f32 --logits -o exact.safetensors
expect_exit 0 "dump under vLLM's cache" -- "$TQLAB" dump "${common[@]}" "${cache[@]}" --dtype f32 --logits \
  -o vllm.safetensors
expect_exit 0 "ppl under vLLM's cache" -- "$TQLAB" ppl "${common[@]}" "${cache[@]}" -o vllm.json
checks=$((checks + 1))
PYTHONPATH="$repo/tools" "$python" - exact.safetensors vllm.safetensors vllm.json <<'PY' || fail "not ppl's forward"
import json, sys
import numpy as np
from kv_dump_format import read_safetensors

def read(path):
    tensors, metadata = read_safetensors(path)
    return metadata, tensors.__getitem__

exact_meta, exact = read(sys.argv[1])
meta, cached = read(sys.argv[2])
run = json.load(open(sys.argv[3]))["runs"][0]
assert not any(key.startswith("tqlab.dump.") for key in exact_meta), exact_meta
want = {"tqlab.dump.engine": "vllm:preset=turboquant_4bit_nc", "tqlab.dump.k": "vllm_tq_key:b=4,nc",
        "tqlab.dump.v": "vllm_uniform:b=4", "tqlab.dump.prefill": "quantized", "tqlab.dump.seed": "0"}
assert {key: meta.get(key) for key in want} == want, meta
for role in "qkv":
    assert np.array_equal(exact(f"layers.0.{role}"), cached(f"layers.0.{role}")), role
    assert not np.array_equal(exact(f"layers.3.{role}"), cached(f"layers.3.{role}")), role

def log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))

base, quantized = log_softmax(exact("logits")), log_softmax(cached("logits"))
scored = slice(160, 319)  # second half: positions ctx/2 .. ctx-2 predict the next token
kl = (np.exp(base[:, scored]) * (base[:, scored] - quantized[:, scored])).sum(axis=-1)
reported = run["metrics"]["e2e_kld"]["mean"]
assert reported > 0 and abs(kl.mean() - reported) <= 1e-4 * reported, (kl.mean(), reported)
PY

expect_refused "a preset with llama.cpp" "presets are engine vllm's" -- "$TQLAB" dump "${common[@]}" \
  --engine llama.cpp --preset fp8 -o bad.safetensors
expect_refused "--k against the preset" "where the preset defines" -- "$TQLAB" dump "${common[@]}" --engine vllm \
  --preset fp8 --k q4_0 -o bad.safetensors
finish
