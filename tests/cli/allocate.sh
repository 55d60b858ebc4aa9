# tqlab allocate through the real binary (docs/ALLOCATE.md):
# - the offline profile of a small synthetic dump: a tqlab.allocation/1 document and a table, the
#   allocation within the budget and never predicted worse than the uniform spec or the boundary rule;
# - the profile cached by content: another budget measures nothing, the same numbers; the same
#   document for any thread count;
# - --verify measures the allocation, uniform and boundary by the sweep; a sweep config's
#   "runs": [{"allocation": FILE}] measures the allocation at its bits;
# - a deliberately fragile key head and value head (and their layers) get the most bits, a free key
#   head (its queries are zero) the cheapest;
# - the model profile on the bundled model: prefix reuse gives the floats of passes from layer 0;
# - every bad input exit 2 with one line naming the option or file, and no output left behind.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- *.safetensors *.npz *.json *.txt cache
repo="$(cd "$(dirname "$0")/../.." && pwd)"
model="$repo/data/tinyllama_hf"
[ -x "$python" ] || { echo "SKIP: $python is absent (the checks read JSON with it)"; exit 77; }

expect_exit 0 "synth" -- "$TQLAB" synth -o small.safetensors --layers 4 --kv-heads 2 --q-heads 4 --tokens 96 --dim 64
cat > offline.json <<'JSON'
{"name": "alloc", "data": {"path": "small.safetensors"}, "metrics": {"attention": {"chunk": 64}}, "seeds": [0, 1]}
JSON
ladder="tq:b=2,nc,tq:b=3,nc,tq:b=4,nc,fp16"

# ---------------------------------------------------------------- offline profile, solve, cache
expect_exit 0 "allocate offline" -- "$TQLAB" allocate --config offline.json --budget tq:b=3,nc --candidates "$ladder" \
  -o a.json --quiet
cp out.txt table.txt
expect_contains table.txt "allocation" "uniform tq:b=3,nc" "boundary" "solver dp"
[ -s err.txt ] && fail "--quiet still wrote to stderr: $(head -2 err.txt)"
expect_exit 0 "allocate again at another budget" -- "$TQLAB" allocate --config offline.json --budget 3.5 \
  --candidates "$ladder" -o b.json --quiet
expect_exit 0 "allocate per layer" -- "$TQLAB" allocate --config offline.json --budget 3.5 --candidates "$ladder" \
  --granularity layer -o c.json --quiet
"$python" - a.json b.json c.json <<'PY' || fail "the allocation documents are not as expected"
import json, sys
a, b, c = (json.load(open(p)) for p in sys.argv[1:])
for d in (a, b, c):
    assert d["schema"] == "tqlab.allocation/1"
    assert d["objective"]["profile"] == "offline" and d["solver"]["method"] == "dp" and d["solver"]["gap"] == 0
    alloc = d["allocation"]
    assert alloc["bytes"] <= d["budget"]["bytes"], (alloc["bytes"], d["budget"])
    for other in d["compared"]:
        assert other["bytes"] <= d["budget"]["bytes"], other["name"]
        assert alloc["damage"] <= other["damage"] * (1 + 1e-12), (other["name"], alloc["damage"], other["damage"])
    assert [x["name"] for x in d["compared"]][-1] == "boundary"
    assert set(d["profile"]["components"]) == {"attn_kl", "attn_out_rel_err", "rel_mse"}
assert a["granularity"] == "layer-head" and len(a["allocation"]["units"]) == 4 * 2 * 2
assert c["granularity"] == "layer" and len(c["allocation"]["units"]) == 4 * 2
assert a["budget"]["given"] == "tq:b=3,nc" and "uniform tq:b=3,nc" in [x["name"] for x in a["compared"]]
assert not a["cache"]["hit"] and b["cache"]["hit"] and c["cache"]["hit"], "the profile was not reused"
assert a["profile"]["units"] == b["profile"]["units"], "the cached profile differs from the measured one"
PY

# The same document for any thread count (outside timing, the profile's wall time and the cache).
for threads in 1 2; do
  expect_exit 0 "allocate --threads $threads" -- "$TQLAB" allocate --config offline.json --budget 3.5 \
    --candidates "$ladder" --no-cache --threads "$threads" -o "t$threads.json" --quiet
done
"$python" - t1.json t2.json <<'PY' || fail "the document depends on the thread count"
import json, sys
one, two = (json.load(open(p)) for p in sys.argv[1:])
for d in (one, two):
    for key in ("timing", "cache"):
        d.pop(key)
    d["profile"].pop("seconds")
assert one == two
PY

# ---------------------------------------------------------------- --verify and a sweep of the allocation
expect_exit 0 "allocate --verify" -- "$TQLAB" allocate --config offline.json --budget tq:b=3,nc \
  --candidates "$ladder" --verify -o v.json --quiet
expect_contains out.txt "measured by the sweep" "meas/pred"
cat > sweep_alloc.json <<'JSON'
{"name": "alloc-run", "data": {"path": "small.safetensors"}, "runs": [{"allocation": "v.json"}],
 "metrics": {"attention": {"chunk": 64}, "needle": false}, "seeds": [0, 1], "out": "s.json"}
JSON
expect_exit 0 "sweep of the allocation" -- "$TQLAB" sweep --config sweep_alloc.json --quiet
"$python" - v.json s.json <<'PY' || fail "--verify or the sweep of the allocation is not as expected"
import json, sys
v, s = (json.load(open(p)) for p in sys.argv[1:])
runs = v["verify"]["runs"]
names = [n for r in runs for n in r["names"]]
assert names[0] == "allocation" and "boundary" in names and "uniform tq:b=3,nc" in names, names
for r in runs:
    assert r["metrics"]["attn_out_rel_err"]["mean"] > 0 and r["ratio"]["attn_out_rel_err"] > 0, r
bits = 8 * v["allocation"]["bytes"] / sum(u["values"] for u in v["profile"]["units"])
assert abs(runs[0]["bits"]["bits_kv"] - bits) < 1e-9, (runs[0]["bits"], bits)
swept = s["runs"][0]
assert abs(swept["bits"]["bits_kv"] - bits) < 1e-9, (swept["bits"], bits)
assert swept["metrics"]["attn_out_rel_err"]["mean"] == runs[0]["metrics"]["attn_out_rel_err"]["mean"]
PY

# ---------------------------------------------------------------- a fragile and a free unit are found
# Layer 1's keys of kv head 1 get a large common offset (6x their mean norm in one direction): the
# offset cancels in the softmax, but the quantization error it brings does not, so these keys are
# fragile and get the most bits of any key unit. The queries reading kv head 0 of layer 2 are zero:
# its keys do not matter and get the cheapest, while its attention is uniform over each prefix, and
# its values, their mean taken out, cancel in it: each output is a small difference of large values,
# and their quantization error is large beside it, so these values are fragile and get the most bits
# of any unit. --verify measures less error than uniform and boundary.
if "$python" -c 'import numpy' 2>/dev/null; then
  expect_exit 0 "synth npz" -- "$TQLAB" synth -o f.npz --layers 3 --kv-heads 2 --q-heads 4 --tokens 128 --dim 64
  "$python" - <<'PY' || fail "could not write fragile.npz"
import numpy as np
d = dict(np.load("f.npz"))
q = d["layers.2.q"].astype(np.float32)
q[0:2] = 0  # query heads 0 and 1 read kv head 0
d["layers.2.q"] = q.astype(np.float16)
v = d["layers.2.v"].astype(np.float32)
v[0] -= v[0].mean(axis=0)
d["layers.2.v"] = v.astype(np.float16)
k = d["layers.1.k"].astype(np.float32)
u = np.random.default_rng(0).standard_normal(k.shape[-1])
k[1] += 6 * np.linalg.norm(k[1], axis=-1).mean() * u / np.linalg.norm(u)
d["layers.1.k"] = k.astype(np.float16)
np.savez("fragile.npz", **d)
PY
  cat > fragile.json <<'JSON'
{"data": {"path": "fragile.npz", "layout": "head token dim"}, "metrics": {"attention": {"chunk": 128}, "needle": false},
 "seeds": [0, 1]}
JSON
  expect_exit 0 "allocate a fragile and a free unit" -- "$TQLAB" allocate --config fragile.json --budget tq:b=3,nc \
    --candidates tq:b=2,nc,tq:b=3,nc,tq:b=4,nc,tq:b=5,nc --verify -o fragile_alloc.json --quiet
  "$python" - fragile_alloc.json <<'PY' || fail "the fragile and the free unit were not found"
import json, sys
d = json.load(open(sys.argv[1]))
spec = {u["unit"]: u["spec"] for u in d["allocation"]["units"]}
bits = {u["unit"]: u["bits"] for u in d["allocation"]["units"]}
assert spec["L2.h0.K"] == "tq:b=2,nc", spec
keys = {unit: b for unit, b in bits.items() if unit.endswith(".K")}
assert max(keys, key=keys.get) == "L1.h1.K" and list(keys.values()).count(keys["L1.h1.K"]) == 1, spec
assert max(bits, key=bits.get) == "L2.h0.V" and list(bits.values()).count(bits["L2.h0.V"]) == 1, spec
for metric in ("attn_out_rel_err", "attn_kl"):
    measured = {name: r["metrics"][metric]["mean"] for r in d["verify"]["runs"] for name in r["names"]}
    assert measured["allocation"] < measured["uniform tq:b=3,nc"], (metric, measured)
    assert measured["allocation"] < measured["boundary"], (metric, measured)
PY
  # Per layer: layer 1's keys hold the fragile key head, so they get the most bits of any key unit, and
  # layer 2's values the fragile value head, the most of any unit.
  expect_exit 0 "allocate a fragile layer" -- "$TQLAB" allocate --config fragile.json --budget tq:b=3,nc \
    --candidates tq:b=2,nc,tq:b=3,nc,tq:b=4,nc,tq:b=5,nc --granularity layer -o fragile_layer.json --quiet
  "$python" - fragile_layer.json <<'PY' || fail "the fragile layer was not found"
import json, sys
units = json.load(open(sys.argv[1]))["allocation"]["units"]
bits = {u["unit"]: u["bits"] for u in units}
keys = {unit: b for unit, b in bits.items() if unit.endswith(".K")}
assert max(keys, key=keys.get) == "L1.K" and list(keys.values()).count(keys["L1.K"]) == 1, bits
assert max(bits, key=bits.get) == "L2.V" and list(bits.values()).count(bits["L2.V"]) == 1, bits
PY
fi

# ---------------------------------------------------------------- the model profile
cat > model.json <<JSON
{"name": "alloc-model", "model": {"path": "$model", "tokens": "$model/windows.npy", "ctx": 64, "chunks": 2},
 "seeds": [0]}
JSON
expect_exit 0 "allocate --profile model" -- "$TQLAB" allocate --config model.json --budget 3.2 \
  --candidates tq:b=2,nc,tq:b=4,nc --granularity layer -o m.json --no-cache --verify --quiet
expect_contains out.txt "e2e_kld" "e2e_ppl_delta_pct" "measured by the sweep"
expect_exit 0 "allocate --profile model from layer 0" -- "$TQLAB" allocate --config model.json --budget 3.2 \
  --candidates tq:b=2,nc,tq:b=4,nc --granularity layer -o m0.json --no-cache --no-prefix-reuse --quiet
"$python" - m.json m0.json <<'PY' || fail "the model profile is not as expected"
import json, sys
m, m0 = (json.load(open(p)) for p in sys.argv[1:])
assert m["objective"]["profile"] == "model" and m["profile"]["components"] == ["e2e_kld", "e2e_ln_ppl_ratio"]
assert m["profile"]["layers_computed_share"] < 1 and m0["profile"]["layers_computed_share"] == 1
assert m["profile"]["units"] == m0["profile"]["units"], "prefix reuse changed the profile's numbers"
assert len(m["profile"]["units"]) == 4 * 2
runs = m["verify"]["runs"]
assert m["verify"]["base"]["ppl"] > 1 and runs[0]["names"][0] == "allocation"
for r in runs:
    assert r["metrics"]["e2e_kld"]["mean"] > 0 and r["ratio"]["e2e_kld"] > 0, r["names"]
for unit in m["profile"]["units"]:
    two, four = unit["candidates"]
    assert two["components"]["e2e_kld"][0] > four["components"]["e2e_kld"][0] > 0, unit["unit"]
PY

expect_exit 0 "allocate --calibrate" -- "$TQLAB" allocate --config model.json --profile offline --calibrate \
  --budget 3.2 --candidates tq:b=2,nc,tq:b=4,nc --granularity layer -o cal.json --quiet
expect_contains out.txt "calibration to the model profile" "key weight"
"$python" - cal.json <<'PY' || fail "the calibration is not as expected"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["calibration"]
assert c["key_weight"] > 0 and c["pairs"] > 0 and len(c["agreement"]) == 2, c
assert d["objective"]["profile"] == "offline" and d["profile"]["source"]["model"]["chunks"] == 2
PY

# ---------------------------------------------------------------- bad inputs
# Each refused with exit 2 and one line naming the option or file, no output written (expect_refused).
expect_refused "impossible budget" "--budget 1" "cheapest" -- "$TQLAB" allocate \
  --config offline.json --budget 1 --candidates "$ladder" -o bad.json --quiet
expect_refused "budget neither bits nor candidate" "--budget 'lots'" -- "$TQLAB" allocate \
  --config offline.json --budget lots -o bad.json --quiet
expect_refused "unknown candidate" "--candidates" "nosuch" -- "$TQLAB" allocate \
  --config offline.json --budget 3 --candidates tq:b=3,nosuch:b=2 -o bad.json --quiet
expect_refused "empty candidate" "--candidates" "empty" -- "$TQLAB" allocate \
  --config offline.json --budget 3 --candidates tq:b=3,,fp16 -o bad.json --quiet
expect_refused "bad granularity" "--granularity 'head'" -- "$TQLAB" allocate \
  --config offline.json --budget 3 --granularity head -o bad.json --quiet
expect_refused "bad profile" "--profile 'online'" -- "$TQLAB" allocate \
  --config offline.json --budget 3 --profile online -o bad.json --quiet
expect_refused "model profile without a model" "--profile model" "model" -- "$TQLAB" allocate \
  --config offline.json --budget 3 --profile model -o bad.json --quiet
expect_refused "missing config" "nosuch.json" -- "$TQLAB" allocate --config nosuch.json --budget 3 -o bad.json --quiet
expect_refused "negative key weight" "--key-weight" -- "$TQLAB" allocate \
  --config offline.json --budget 3 --key-weight -1 -o bad.json --quiet
expect_refused "calibrate without a model" "--calibrate" "model" -- "$TQLAB" allocate \
  --config offline.json --budget 3 --calibrate -o bad.json --quiet
cat > sweep_missing.json <<'JSON'
{"data": {"path": "small.safetensors"}, "runs": [{"allocation": "nosuch.json"}], "out": "never.json"}
JSON
expect_exit 2 "a sweep of a missing allocation file" -- "$TQLAB" sweep --config sweep_missing.json --quiet
expect_error_line "nosuch.json"
cat > sweep_not_alloc.json <<'JSON'
{"data": {"path": "small.safetensors"}, "runs": [{"allocation": "offline.json"}], "out": "never.json"}
JSON
expect_exit 2 "a sweep of a file that is no allocation" -- "$TQLAB" sweep --config sweep_not_alloc.json --quiet
expect_error_line "offline.json" "schema"
[ -e never.json ] && fail "a refused sweep wrote its output"
expect_exit 2 "no output" -- "$TQLAB" allocate --config offline.json --budget 3 --quiet
expect_error_line "--output"
finish
