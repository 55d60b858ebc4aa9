# tqlab ppl and tqlab dump on the bundled model (data/tinyllama_hf) through the real binary:
# - the base perplexity of the sample windows equals what a float32 PyTorch forward gives
#   (data/tinyllama_hf/README.md: ctx 256, 8 chunks, second-half 3.708435, all 3.842861) to 1e-5;
# - an fp32 cache is the exact cache: KLD 0, same top-1 everywhere, PPL unchanged;
# - a quantized run writes the same document for --threads 1 and 2 (outside "timing"), with the
#   e2e metrics in the tqlab.sweep/1 shape (mean, se, std, per_seed) that diff and report read;
# - tqlab dump writes a KV dump that inspect, sweep and roundtrip read with their defaults, whose
#   input_ids feed tqlab ppl back to the same base perplexity, and whose bits per value a sweep
#   on it measures as the e2e run does (the same fake_quantize_rows in the same contexts);
# - with the PyTorch outputs at hand (the shared data folder's tinyllama_hf/reference.safetensors):
#   dump --dtype f32 --logits equals their q, k, v and logits to 1e-5 of the largest magnitude.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- *.json *.txt *.safetensors
repo="$(cd "$(dirname "$0")/../.." && pwd)"
model="$repo/data/tinyllama_hf"
windows="$model/windows.npy"
require_numpy "the checks read the results and the dumps with numpy"

# close A B RTOL: |A - B| <= RTOL |B|
close() {
  "$python" -c "import sys; a, b, r = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= r * abs(b) else 1)" "$@"
}
json_value() {  # json_value FILE PYTHON-EXPRESSION-ON-d
  "$python" -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1"
}

# ---------------------------------------------------------------- the base against PyTorch
expect_exit 0 "ppl base, second-half" -- "$TQLAB" ppl --model "$model" --tokens "$windows" --ctx 256 -o base.json --quiet
expect_contains out.txt "PPL = 3.7084 +/- " "8 chunks of 256 tokens" "1016 predictions scored"
checks=$((checks + 1))
close "$(json_value base.json 'd["e2e"]["base"]["ppl"]')" 3.708435 1e-5 ||
  fail "second-half base PPL $(json_value base.json 'd["e2e"]["base"]["ppl"]') is not PyTorch's 3.708435"
expect_exit 0 "ppl base, all" -- "$TQLAB" ppl --model "$model" --tokens "$windows" --ctx 256 --score all -o all.json --quiet
checks=$((checks + 1))
close "$(json_value all.json 'd["e2e"]["base"]["ppl"]')" 3.842861 1e-5 ||
  fail "all-tokens base PPL $(json_value all.json 'd["e2e"]["base"]["ppl"]') is not PyTorch's 3.842861"
[ "$(json_value all.json 'd["e2e"]["scored_tokens"]')" = 2040 ] || fail "--score all does not score 2040 predictions"

# Without --k/--v the cache is fp32 through the same hook: exactly the base.
"$python" - base.json <<'PY' || fail "an fp32 cache is not the exact cache"
import json, sys
d = json.load(open(sys.argv[1]))
run = d["runs"][0]
assert run["id"] == "k=fp32 v=fp32 window=0 sink=0", run["id"]
m = run["metrics"]
assert m["e2e_kld"]["mean"] == 0 and m["e2e_kld_max"]["mean"] == 0, m["e2e_kld"]
assert m["e2e_top1"]["mean"] == 1 and m["e2e_ppl_delta_pct"]["mean"] == 0 and m["e2e_dp_rms"]["mean"] == 0
assert m["e2e_ppl"]["mean"] == d["e2e"]["base"]["ppl"]
assert run["bits"]["bits_kv"] == 32
PY

# ---------------------------------------------------------------- a quantized run, any thread count
for threads in 1 2; do
  expect_exit 0 "ppl tq:b=3 --threads $threads" -- "$TQLAB" ppl --model "$model" --tokens "$windows" --ctx 256 \
    --k tq:b=3 --v tq:b=3 --window 16 --window-mode tail --sink 2 --seeds 0,1 --threads "$threads" -o "q$threads.json" --quiet
  cp out.txt "q$threads.txt"
done
cmp -s q1.txt q2.txt || fail "ppl prints other numbers for --threads 1 and 2"
"$python" - q1.json q2.json base.json <<'PY' || fail "the quantized run's document is not as expected"
import json, math, sys
a, b, base = (json.load(open(p)) for p in sys.argv[1:])
assert a["timing"]["threads"] == 1 and b["timing"]["threads"] == 2
a.pop("timing"); b.pop("timing")
assert a == b, "documents differ between --threads 1 and 2"
assert a["schema"] == "tqlab.sweep/1"
assert a["config"]["model"] == {"path": a["model"]["path"], "tokens": a["config"]["model"]["tokens"], "ctx": 256,
                                "chunks": 8, "score": "second-half", "bos": False, "window_mode": "tail"}
assert a["config"]["metrics"] == {"reconstruction": False, "attention": False, "needle": False, "per_head": False}
assert a["model"]["architecture"] == "LlamaForCausalLM"
assert a["model"]["config_sha256"] == "1eede2dfca3cf502f4c26770bcb36ffeb1ac477877adbe38eced15830d0473a4"
assert a["model"]["files"] == [{"name": "model.safetensors", "bytes": 12137528,
                                "sha256": "1ef3a06409de1dc37d87f40e4197ca548b0d4bc185bd624fc9e8431cf70fc0c4"}]
assert a["tokens"]["sha256"] == "ca4178699b1cbf5edd219216b0af643431739be274a540c5b4ca1da3eead9f28"
assert a["tokens"]["count"] == 2048 and a["tokens"]["dtype"] == "i32"
assert a["e2e"]["base"] == base["e2e"]["base"], "the base differs between runs of the same tokens"
run = a["runs"][0]
assert run["id"] == "k=tq:b=3 v=tq:b=3 window=16 sink=2" and run["seeds"] == [0, 1]
# 3 bits + one fp16 norm per 64 values; 18 of 256 tokens kept exact at 16 bits.
assert run["bits"]["bits_kv"] == 3.25, run["bits"]
assert abs(run["bits"]["bits_kv_effective"] - ((238 * 3.25 + 18 * 16) / 256)) < 1e-12, run["bits"]
names = ["e2e_ppl", "e2e_ppl_delta_pct", "e2e_ln_ppl_ratio", "e2e_kld", "e2e_kld_p99", "e2e_kld_p95",
         "e2e_kld_median", "e2e_kld_max", "e2e_top1", "e2e_dp", "e2e_dp_rms"]
assert list(run["metrics"]) == names, list(run["metrics"])
for name, m in run["metrics"].items():
    assert list(m) == ["mean", "se", "std", "per_seed"] and len(m["per_seed"]) == 2, (name, m)
    assert abs(m["mean"] - sum(m["per_seed"]) / 2) < 1e-12 and m["std"] is not None, (name, m)
    assert (m["se"] is None) == (name in ("e2e_kld_p99", "e2e_kld_p95", "e2e_kld_median", "e2e_kld_max")), name
m = run["metrics"]
assert m["e2e_kld"]["mean"] > 0 and m["e2e_ppl_delta_pct"]["mean"] > 0 and m["e2e_top1"]["mean"] < 1
assert m["e2e_kld_median"]["mean"] <= m["e2e_kld_p95"]["mean"] <= m["e2e_kld_p99"]["mean"] <= m["e2e_kld_max"]["mean"]
# The delta follows from the two perplexities of each seed.
for seed in range(2):
    ratio = m["e2e_ppl"]["per_seed"][seed] / a["e2e"]["base"]["ppl"]
    assert abs(100 * (ratio - 1) - m["e2e_ppl_delta_pct"]["per_seed"][seed]) < 1e-9
    assert abs(math.log(ratio) - m["e2e_ln_ppl_ratio"]["per_seed"][seed]) < 1e-12
PY
expect_contains q1.txt "k=tq:b=3 v=tq:b=3 window=16 sink=2 (seeds 0,1):" "KLD = " "same top-1 = " "PPL change = +"
expect_exit 0 "report reads a ppl document" -- "$TQLAB" report q1.json
expect_contains out.txt "e2e_ppl_delta_pct" "e2e_kld" "e2e_top1" "tq:b=3"
expect_exit 0 "diff of the two thread counts" -- "$TQLAB" diff q1.json q2.json
expect_exit 1 "diff finds the quantized run unlike the exact one" -- "$TQLAB" diff q1.json base.json

# ---------------------------------------------------------------- --bos
expect_exit 0 "ppl --bos" -- "$TQLAB" ppl --model "$model" --tokens "$windows" --ctx 256 --bos --score all -o bos.json --quiet
[ "$(json_value bos.json 'd["config"]["model"]["bos"]')" = True ] || fail "--bos is not recorded"
# Every window starts after a line feed, the model's BOS, so replacing the first byte by it changes only
# the first prediction of each chunk.
"$python" - bos.json all.json <<'PY' || fail "--bos does not change the base as expected"
import json, sys
bos, plain = (json.load(open(p)) for p in sys.argv[1:])
assert bos["e2e"]["base"]["ppl"] != plain["e2e"]["base"]["ppl"]
assert abs(bos["e2e"]["base"]["ppl"] / plain["e2e"]["base"]["ppl"] - 1) < 0.05
PY

# ---------------------------------------------------------------- tqlab dump
expect_exit 0 "dump f16" -- "$TQLAB" dump --model "$model" --tokens "$windows" --ctx 256 -o kv.safetensors --quiet
expect_exit 0 "inspect the dump" -- "$TQLAB" inspect kv.safetensors
expect_contains out.txt "layers.3.q" "[8, 4, 256, 64]" "layers.0.k" "[8, 2, 256, 64]" "input_ids" "layout: seq head token dim"
cat > sweep.json <<'JSON'
{"name": "dumped", "data": {"path": "kv.safetensors"}, "grid": {"k": ["tq:b=3"], "v": ["tq:b=3"]},
 "metrics": {"attention": {"chunk": 256}, "needle": false}, "out": "sweep_out.json"}
JSON
expect_exit 0 "sweep the dump with the defaults" -- "$TQLAB" sweep --config sweep.json --quiet
[ "$(json_value sweep_out.json 'd["runs"][0]["bits"]["bits_kv"]')" = "$(json_value q1.json 'd["runs"][0]["bits"]["bits_kv"]')" ] ||
  fail "the sweep on the dump and the e2e run count other bits for tq:b=3"
[ "$(json_value sweep_out.json 'd["data"]["layout"]')" = "seq head token dim" ] || fail "the dump's layout was not read"
expect_exit 0 "roundtrip the dump" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=4 --v tq:b=4 -o kv_rt.safetensors --quiet
expect_contains out.txt "layers.0.k" "layers.3.v"
expect_exit 0 "ppl on the dump's input_ids" -- "$TQLAB" ppl --model "$model" --tokens kv.safetensors:input_ids --ctx 256 -o ids.json --quiet
[ "$(json_value ids.json 'd["e2e"]["base"]["ppl"]')" = "$(json_value base.json 'd["e2e"]["base"]["ppl"]')" ] ||
  fail "the dump's input_ids do not give the base perplexity of windows.npy"
expect_exit 0 "dump two layers in bf16" -- "$TQLAB" dump --model "$model" --tokens "$windows" --ctx 128 --chunks 3 \
  --layers 1,3 --dtype bf16 -o kv2.safetensors --quiet
expect_exit 0 "inspect the partial dump" -- "$TQLAB" inspect kv2.safetensors
expect_contains out.txt "layers.1.q" "layers.3.v" "[3, 2, 128, 64]" "bf16"
grep -q "layers.0.q" out.txt && fail "--layers 1,3 wrote layer 0"

reference="$SHARED_DATA/tinyllama_hf/reference.safetensors"
if [ -f "$reference" ]; then
  expect_exit 0 "dump f32 with logits" -- "$TQLAB" dump --model "$model" --tokens "$windows" --ctx 256 --dtype f32 \
    --logits -o kv32.safetensors --quiet
  "$python" - kv32.safetensors "$reference" <<'PY' || fail "tqlab dump differs from PyTorch's q/k/v/logits by more than 1e-5"
import json, struct, sys
import numpy as np
def load(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    types = {"F32": "<f4", "F16": "<f2", "I32": "<i4", "I64": "<i8"}
    return {k: np.frombuffer(data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], dtype=types[v["dtype"]])
               .reshape(v["shape"]) for k, v in header.items() if k != "__metadata__"}
ours, torch = load(sys.argv[1]), load(sys.argv[2])
assert (ours["input_ids"] == torch["input_ids"]).all()
worst = 0
for name in torch:
    if name == "input_ids":
        continue
    a, b = ours[name].astype(np.float64), torch[name].astype(np.float64)
    assert a.shape == b.shape, (name, a.shape, b.shape)
    error = np.abs(a - b).max() / np.abs(b).max()
    worst = max(worst, error)
    assert error < 1e-5, (name, error)
print(f"max |diff| / max |value| over q, k, v and logits: {worst:.2e}")
PY
else
  echo "note: $reference not found: the comparison with PyTorch's q/k/v/logits is skipped"
fi
finish
