# Every architecture variant tqlab runs, through the real binary, against an independent float64
# numpy forward written from transformers' modeling code (tools/reference_forward.py): random-weight
# checkpoints made here by tools/make_checkpoints.py (Llama with llama3 and linear rope scaling and
# biases, BF16 weights, a sharded index; Mistral with an explicit head_dim in F16; Qwen2 with q/k/v
# biases and tied embeddings; Qwen3 with q/k norms and head_dim != hidden/heads). tqlab dump --dtype
# f32 --logits must give the numpy logits and post-RoPE q, k, v to 1e-5 of their largest magnitude,
# and tqlab ppl must run on each with a quantized cache.
# The numpy forward is itself checked on the bundled trained model against PyTorch's outputs when
# those are at hand (the shared data folder's tinyllama_hf/reference.safetensors).
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- models *.npz *.safetensors *.json *.txt
repo="$(cd "$(dirname "$0")/../.." && pwd)"
require_numpy "tools/make_checkpoints.py and tools/reference_forward.py are numpy programs"
"$python" "$repo/tools/make_checkpoints.py" models || { echo "FAIL: make_checkpoints.py failed"; exit 1; }

# compare DUMP.safetensors REFERENCE.npz LAYERS: logits and q/k/v within 1e-5 of the largest magnitude.
compare() {
  "$python" - "$@" <<'PY'
import json, struct, sys
import numpy as np
dump, reference, layers = sys.argv[1], np.load(sys.argv[2]), int(sys.argv[3])
data = open(dump, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
def tensor(name):
    entry = header[name]
    begin, end = entry["data_offsets"]
    return np.frombuffer(data[8 + n + begin:8 + n + end], dtype="<f4").reshape(entry["shape"]).astype(np.float64)
pairs = [("logits", "logits")] + [(f"layers.{l}.{r}", f"{r}{l}") for l in range(layers) for r in "qkv"]
worst = 0.0
for ours, theirs in pairs:
    a, b = tensor(ours), reference[theirs]
    assert a.shape == b.shape, (ours, a.shape, b.shape)
    error = np.abs(a - b).max() / np.abs(b).max()
    worst = max(worst, error)
    if not error < 1e-5:
        sys.exit(f"{ours}: max |tqlab - numpy| / max |numpy| = {error:.2e}")
print(f"{worst:.2e}")
PY
}

for variant in llama3_rope llama_linear llama_bf16 llama_sharded mistral qwen2_tied qwen3_qknorm; do
  expect_exit 0 "dump $variant" -- "$TQLAB" dump --model "models/$variant" --tokens models/tokens.npy --ctx 64 \
    --chunks 2 --dtype f32 --logits -o "$variant.safetensors" --quiet
  checks=$((checks + 1))
  "$python" "$repo/tools/reference_forward.py" "models/$variant" models/tokens.npy --ctx 64 --chunks 2 -o "$variant.npz" ||
    fail "reference_forward.py failed on $variant"
  if error=$(compare "$variant.safetensors" "$variant.npz" 2 2>&1); then
    echo "$variant: max |tqlab - numpy| / max |numpy| = $error"
  else
    fail "$variant: tqlab's forward differs from the numpy forward: $error"
  fi
  expect_exit 0 "ppl $variant" -- "$TQLAB" ppl --model "models/$variant" --tokens models/tokens.npy --ctx 64 \
    --k tq:b=3 --v tq:b=4 -o "$variant.json" --quiet
  expect_contains out.txt "PPL = " "KLD = "
done

# The variants differ where they should: tied embeddings have no lm_head, the shards an index.
[ -f models/qwen2_tied/model.safetensors ] && ! grep -q lm_head models/qwen2_tied/model.safetensors ||
  fail "qwen2_tied holds an lm_head"
[ -f models/llama_sharded/model.safetensors.index.json ] || fail "llama_sharded has no index"
expect_exit 0 "inspect a BF16 checkpoint" -- "$TQLAB" inspect models/llama_bf16/model.safetensors
expect_contains out.txt "bf16"

# --bos: the numpy forward replaces the first token too.
expect_exit 0 "dump with --bos" -- "$TQLAB" dump --model models/qwen3_qknorm --tokens models/tokens.npy --ctx 64 \
  --chunks 1 --dtype f32 --logits --bos -o bos.safetensors --quiet
"$python" "$repo/tools/reference_forward.py" models/qwen3_qknorm models/tokens.npy --ctx 64 --chunks 1 --bos -o bos.npz
checks=$((checks + 1))
compare bos.safetensors bos.npz 2 >/dev/null || fail "--bos: tqlab and numpy differ"

# The numpy forward itself, on the bundled trained model, against PyTorch.
reference="$SHARED_DATA/tinyllama_hf/reference.safetensors"
if [ -f "$reference" ]; then
  "$python" "$repo/tools/reference_forward.py" "$repo/data/tinyllama_hf" "$repo/data/tinyllama_hf/windows.npy" --ctx 256 \
    -o tiny.npz || fail "reference_forward.py failed on the bundled model"
  checks=$((checks + 1))
  "$python" - tiny.npz "$reference" <<'PY' || fail "the numpy forward does not reproduce PyTorch on the bundled model"
import json, struct, sys
import numpy as np
ours = np.load(sys.argv[1])
data = open(sys.argv[2], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
def tensor(name):
    b, e = header[name]["data_offsets"]
    return np.frombuffer(data[8 + n + b:8 + n + e], dtype="<f4").reshape(header[name]["shape"])
for name, theirs in [("logits", "logits")] + [(f"{r}{l}", f"layers.{l}.{r}") for l in range(4) for r in "qkv"]:
    error = np.abs(ours[name] - tensor(theirs)).max() / np.abs(tensor(theirs)).max()
    assert error < 1e-5, (name, error)
PY
else
  echo "note: $reference not found: the numpy forward is not checked against PyTorch"
fi
finish
