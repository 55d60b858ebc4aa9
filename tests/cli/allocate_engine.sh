# tqlab allocate --engine llama.cpp on the bundled model (data/tinyllama_hf), through the real binary:
# - the engine's plans are its shape (one cache type for K and one for V, every layer: 7 x 7 plans of
#   its default types), the best is the least predicted damage among the plans within the budget,
#   it is never worse than a uniform type that fits (those are plans too), and the printed flags
#   name it (-ctk K -ctv V -fa on; LLAMA_ATTN_ROT_DISABLE=1 first with rot=off);
# - with --verify the plan is measured under the engine itself and in tqlab's semantics, and given
#   to llama.cpp itself (node-llama-cpp, tools/llamacpp_reference/perplexity.mjs) its flags give the
#   perplexity the engine run measured, within the llama.cpp engine's bound (2.5e-4 relative,
#   tests/cli/llamacpp_reference.sh);
# - llama.cpp's profile is measured in its numerics (marked so, cached apart from tqlab's) and at 4.5 bits
#   predicts the plan's run under llama.cpp itself better than the profile of the same types in tqlab's
#   semantics;
# - ik_llama.cpp's plans (a type per role and others for the first N and last M layers) are never
#   worse than llama.cpp's at the same budget, and their flags name the ranges; vllm's are its presets
#   with the layers they keep unquantized and a layer map (tests/cli/allocate_layer_map.sh has its file);
#   trtllm's a dtype per layer in TensorRT-LLM's range string;
# - beside the engine's plan, at the same bits: the per-head and per-layer optima, uniform and the rules
#   (boundary, vLLM's, ik_llama.cpp's 15%/10%), every row that fits measured; the engine's plan never
#   worse than a rule it can run (predicted), and measured where the margin is wide;
# - on a random-weight model with a planted fragile layer (tools/make_fragile_checkpoint.py) the
#   allocation, TensorRT-LLM's plan and vLLM's skip list all single that layer out;
# - what the engine cannot run is one line and exit 2.
# The npm package is a test dependency tools/install_deps.sh installs: missing, this test FAILS.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
require_references llamacpp_reference/node_modules/node-llama-cpp
reference="$repo/tools/llamacpp_reference"
model="$repo/data/tinyllama_hf"
tokens="$model/windows.npy"

cat >config.json <<JSON
{"model": {"path": "$model", "tokens": "$tokens", "ctx": 128, "chunks": 8},
 "metrics": {"needle": false}, "seeds": [0]}
JSON

# ---------------------------------------------------------------- refusals: one line, exit 2
cat >offline.json <<JSON
{"data": {"path": "$repo/data/sample_kv.safetensors"}, "metrics": {"needle": false}, "seeds": [0]}
JSON
expect_exit 2 "an engine without a model block" -- "$TQLAB" allocate --config offline.json --engine llama.cpp \
  --budget 6 -o refused.json
expect_contains err.txt "--engine llama.cpp" '"model" block'
expect_exit 2 "a candidate the engine has no cache type for" -- "$TQLAB" allocate --config config.json \
  --engine llama.cpp --candidates q8_0,tq:b=3 --budget 6 -o refused.json
expect_contains err.txt "--candidates 'tq:b=3'" "q4_0"
expect_exit 2 "an engine with shards" -- "$TQLAB" allocate --config config.json --engine llama.cpp --shard 1/2 \
  -o refused.json
expect_contains err.txt "--engine"
expect_exit 2 "no such engine" -- "$TQLAB" allocate --config config.json --engine sglang --budget 6 -o refused.json
expect_contains err.txt "sglang" "llama.cpp" "trtllm"
expect_exit 2 "a type TensorRT-LLM has no dtype for" -- "$TQLAB" allocate --config config.json --engine trtllm \
  --candidates fp16,q8_0 --budget 6 -o refused.json
expect_contains err.txt "--candidates 'q8_0'" "nvfp4"
expect_exit 2 "a bad engine option" -- "$TQLAB" allocate --config config.json --engine tqlab:x=1 \
  --budget 6 -o refused.json
[ ! -e refused.json ] || fail "a refused allocation wrote its output"

# ---------------------------------------------------------------- the plan, its flags, llama.cpp itself
expect_exit 0 "allocate --engine llama.cpp --verify" -- "$TQLAB" allocate --config config.json --engine llama.cpp \
  --budget 7 --verify --threads 2 -o alloc.json
expect_contains out.txt "engine llama.cpp: one cache type" "run it with: -ctk " " -fa on" "llama.cpp itself"
read -r k v <<<"$("$python" -c '
import json; e = json.load(open("alloc.json"))["engine"]; print(e["best"]["k"], e["best"]["v"])')"
"$python" - alloc.json <<'PY' || fail "the engine's plans, best or flags are not what they should be"
import json, sys
doc = json.load(open(sys.argv[1]))
engine, budget = doc["engine"], doc["budget"]["bits"]
types = ["f16", "q8_0", "q5_1", "q5_0", "iq4_nl", "q4_1", "q4_0"]
plans = engine["plans"]
assert sorted((p["k"], p["v"]) for p in plans) == sorted((k, v) for k in types for v in types), "not 7 x 7 plans"
fits = [p for p in plans if p["fits"]]
assert all(p["bits"] <= budget + 1e-12 for p in fits) and all(p["bits"] > budget for p in plans if not p["fits"])
best = engine["best"]
# The profile's pick is the least predicted damage within the budget; --verify keeps it unless a plan
# the engine can run at the budget (here a uniform type) measured less (allocate/measured_pick.h).
least = min(p["damage"] for p in fits)
assert best["bits"] <= budget and (best["damage"] == least) == (engine["chosen_by"] == "profile"), engine
for p in fits:
    if p["k"] == p["v"]:
        assert least <= p["damage"], f"worse than uniform {p['k']}"
assert engine["invocation"] == f"-ctk {best['k']} -ctv {best['v']} -fa on", engine["invocation"]
names = [name for run in doc["verify"]["runs"] for name in run["names"]]
assert "llama.cpp itself" in names and best["name"] in names and "allocation" in names, names
# Each contender ran under llama.cpp's numerics; the plan it is told to run measured least there.
itself = {n: r["metrics"]["e2e_kld"]["mean"] for r in doc["verify"]["runs"] for n in r["names"] if "itself" in n}
assert len(itself) == len(engine["contenders"]) + 1, (itself, engine["contenders"])
assert all(itself["llama.cpp itself"] <= value for value in itself.values()), itself
# Side by side at the same bits: the engine's plan first, both optima, uniform and the rules, every row
# that fits measured; vLLM's rule keeps all 4 layers at f16 here, over the budget, and is not measured.
rows = doc["same_bits"]["rows"]
labels = [row["label"] for row in rows]
assert rows[0]["kind"] == "engine" and rows[0]["name"] == best["name"], labels
for label in ("per-head optimum (the allocation)", "per-layer optimum"):
    assert label in labels, labels
assert any(l.startswith("uniform ") for l in labels) and any(l.startswith("boundary") for l in labels), labels
vllm = next(row for row in rows if row["label"].startswith("vLLM's boundary rule"))
assert vllm["label"] == "vLLM's boundary rule (every layer f16)" and not vllm["fits"] and vllm["name"] not in names
ends = next(row for row in rows if row["label"].startswith("ik_llama.cpp's 15%/10% rule (first 1 and last 1 layers"))
assert ends["fits"] and ends["bits"] <= budget, ends
for row in rows:
    assert not row["fits"] or (row["name"] in names and row["bits"] <= budget + 1e-12), row
    if row["kind"] == "optimum":
        assert row["damage"] <= best["damage"] * (1 + 1e-12), row
per_layer = next(row for row in rows if row["label"] == "per-layer optimum")
assert per_layer["granularity"] == "layer" and rows[1]["granularity"] == "layer-head", rows
saved = doc["same_bits"]["optimum_damage_saved"]
assert set(saved) == {"allocation", "per-layer optimum"} and all(0 <= v < 1 for v in saved.values()), saved
assert doc["same_bits"]["engine_on_other"]["granularity"] == "layer", doc["same_bits"]["engine_on_other"]
# Measured too, llama.cpp's one-type plan beats every rule and uniform type that fits the same bits.
kld = {name: run["metrics"]["e2e_kld"]["mean"] for run in doc["verify"]["runs"] for name in run["names"]}
for row in rows:
    if row["kind"] in ("uniform", "rule") and row["fits"]:
        assert kld[best["name"]] <= kld[row["name"]], (best["name"], row["label"], kld)
PY
expect_contains out.txt "at the same bits (7.0000 per value)" "per-layer optimum" "less predicted damage than" \
  "ik_llama.cpp's 15%/10% rule" "over the budget"
"$python" "$repo/tools/hf_to_gguf.py" "$model" model.gguf || fail "hf_to_gguf.py"
"$node" "$reference/perplexity.mjs" model.gguf "$tokens" --ctx 128 --chunks 8 --run "$k,$v" >llamacpp.json ||
  fail "llama.cpp's perplexity.mjs with the printed flags ($k, $v)"
checks=$((checks + 1))
"$python" - alloc.json llamacpp.json <<'PY' || fail "llama.cpp with the printed flags does not give the engine run's numbers"
import json, sys
doc, reference = (json.load(open(p)) for p in sys.argv[1:3])
run = next(r for r in doc["verify"]["runs"] if "llama.cpp itself" in r["names"])
ours = run["metrics"]["e2e_ppl"]["mean"]
theirs = reference["runs"][0]["ppl"]
residual = abs(ours - theirs) / theirs
print(f"-ctk {reference['runs'][0]['k']} -ctv {reference['runs'][0]['v']}: tqlab's llama.cpp engine {ours!r}, "
      f"llama.cpp {theirs!r}, relative {residual:.2e}")
sys.exit(residual > 2.5e-4)
PY

# ik_llama.cpp: first-N / last-M ranges per role; at least as good as llama.cpp's one-type plan at the
# same budget (a special case), measured in tqlab's semantics only (no "itself" run), flags that say so.
expect_exit 0 "allocate --engine ik_llama.cpp --verify" -- "$TQLAB" allocate --config config.json \
  --engine ik_llama.cpp --budget 7 --verify --threads 2 -o alloc_ik.json --quiet
expect_contains out.txt "engine ik_llama.cpp: per role" "run it with: -ctk "
"$python" - alloc.json alloc_ik.json <<'PY' || fail "ik_llama.cpp's plan is not a valid range plan at least as good"
import json, sys
one, ik = (json.load(open(p)) for p in sys.argv[1:3])
best, layers = ik["engine"]["best"], 4
# llama.cpp's plans are scored on a profile in llama.cpp's numerics, ik_llama.cpp's in tqlab's: the
# one-type plans it holds are scored here on ik_llama.cpp's own profile.
profile = ik["profile"]
spec = {"f16": "fp16"}
def score(k, v):
    units = profile["units"]
    cells = [u["candidates"][profile["candidates"].index(spec.get(k if u["role"] == "key" else v,
                                                                  k if u["role"] == "key" else v))] for u in units]
    return sum(c["damage"] for c in cells), 8 * sum(c["bytes"] for c in cells) / sum(u["values"] for u in units)
types = ["f16", "q8_0", "q5_1", "q5_0", "iq4_nl", "q4_1", "q4_0"]
one_type = min(d for d, bits in (score(k, v) for k in types for v in types) if bits <= ik["budget"]["bits"] + 1e-12)
assert best["bits"] <= ik["budget"]["bits"] and best["damage"] <= one_type * (1 + 1e-12), (best, one_type)
flags = f"-ctk {best['k']}"
for role in ("k", "v"):
    if role == "v":
        flags += f" -ctv {best['v']}"
    first, last = best.get(role + "_first", ["", 0]), best.get(role + "_last", ["", 0])
    assert first[1] + last[1] <= layers
    if first[1]: flags += f" -ct{role}-first {first[0]},{first[1]}"
    if last[1]: flags += f" -ct{role}-last {last[0]},{last[1]}"
assert ik["engine"]["invocation"] == flags, (ik["engine"]["invocation"], flags)
names = [name for run in ik["verify"]["runs"] for name in run["names"]]
assert best["name"] in names and ik["engine"]["measured_as"] is None, names
PY

# llama.cpp's profile is measured in its numerics (each unit's layer under the engine's cache, the
# other units exact), ik_llama.cpp's in tqlab's: marked so and cached apart. At 4.5 bits (4-bit blocks,
# where llama.cpp's rotation matters most) the engine's profile predicts the plan's run under llama.cpp
# itself better than tqlab's profile of the same types does: -3% against +20% on these windows. At 5 to 7
# bits on windows this short both are within the profile's additivity error and tqlab's is the closer
# (-7%, -14%, -3% against +2%, -6%, -1%); on the bundled config's windows of 256 the engine's is closer at
# 4.5, 5 and 6 bits (docs/FINDINGS.md). Both budgets' numbers are printed; 4.5 bits is held.
expect_exit 0 "allocate --engine llama.cpp --verify at 4.5 bits" -- "$TQLAB" allocate --config config.json \
  --engine llama.cpp --budget 4.5 --verify --threads 2 -o alloc_45.json --quiet
"$python" - alloc.json alloc_ik.json alloc_45.json <<'PY' || fail "the profile is not in its numerics, or no better"
import json, sys
engine_doc, tqlab_doc, low_doc = (json.load(open(p)) for p in sys.argv[1:4])
for doc, numerics in ((engine_doc, "llama.cpp"), (tqlab_doc, "tqlab"), (low_doc, "llama.cpp")):
    assert doc["profile"]["numerics"] == numerics and doc["profile"]["source"]["numerics"] == numerics, doc["cache"]
assert engine_doc["profile"]["content_key"] != tqlab_doc["profile"]["content_key"]
assert engine_doc["cache"]["path"] != tqlab_doc["cache"]["path"], engine_doc["cache"]
assert low_doc["cache"] == {"path": engine_doc["cache"]["path"], "hit": True}, low_doc["cache"]
spec = {"f16": "fp16"}
def predicted(profile, best):
    total = 0.0
    for unit in profile["units"]:
        name = best["k"] if unit["role"] == "key" else best["v"]
        cell = unit["candidates"][profile["candidates"].index(spec.get(name, name))]
        kld = cell["components"]["e2e_kld"]
        total += sum(kld) / len(kld)
    return total
errors = []
for doc in (engine_doc, low_doc):
    best = doc["engine"]["best"]
    run = next(r for r in doc["verify"]["runs"] if "llama.cpp itself" in r["names"])
    measured = run["metrics"]["e2e_kld"]["mean"]
    ours, theirs = predicted(doc["profile"], best), predicted(tqlab_doc["profile"], best)
    print(f"{doc['budget']['bits']} bits, -ctk {best['k']} -ctv {best['v']}: llama.cpp itself e2e_kld {measured:.6g}; "
          f"predicted by the profile in llama.cpp's numerics {ours:.6g} ({ours / measured - 1:+.1%}), "
          f"in tqlab's {theirs:.6g} ({theirs / measured - 1:+.1%})")
    errors.append((abs(ours - measured), abs(theirs - measured)))
sys.exit(errors[1][0] >= errors[1][1])
PY

# vllm: a preset everywhere but kept layers (a TurboQuant preset keeps all 4 of this model's layers:
# its first and last 2), with --kv-cache-dtype and the extra kept layers as its flags; or the layer map.
expect_exit 0 "allocate --engine vllm" -- "$TQLAB" allocate --config config.json --engine vllm --budget 9 \
  -o alloc_vllm.json --quiet
"$python" - alloc_vllm.json <<'PY' || fail "vllm's plans are not its presets with their kept layers"
import json, sys
doc = json.load(open(sys.argv[1]))
engine = doc["engine"]
presets = {p["preset"]: p for p in engine["plans"] if "preset" in p}
assert presets["turboquant_4bit_nc"]["kept_layers"] == [0, 1, 2, 3] if "turboquant_4bit_nc" in presets else True
assert all(p["bits"] <= doc["budget"]["bits"] for p in engine["plans"])
best = engine["best"]
assert best["damage"] == min(p["damage"] for p in engine["plans"]), engine
# 16-bit TurboQuant layers cannot fit 9 bits here: the best preset is an fp8 one.
preset = min((p for p in engine["plans"] if "preset" in p), key=lambda p: p["damage"])
assert preset["preset"] in ("fp8", "fp8_per_token_head"), preset
maps = [p for p in engine["plans"] if "layer_map" in p]
assert len(maps) == 1 and set(maps[0]["layer_map"].values()) <= {"FP8", "NVFP4"}, maps  # beside the presets
if "layer_map" in best:  # vLLM PR #56116: the checkpoint's recipe, read with "auto"
    assert engine["invocation"] == "--kv-cache-dtype auto" and engine["loader_config"], engine
else:
    flags = "--kv-cache-dtype " + best["preset"]
    if best["skip_layers"]:
        flags += " --kv-cache-dtype-skip-layers " + " ".join(map(str, best["skip_layers"]))
    assert engine["invocation"] == flags and engine["loader_config"] is None, engine
PY

# trtllm: a dtype per layer, keys and values alike, as TensorRT-LLM's range string; the profile's pick
# never predicted worse than a rule or a uniform type it can run at the same bits (each is a dtype per
# layer), and with --verify the plan it is told to run never measured worse than one (chosen by
# measurement among them: allocate/measured_pick.h).
expect_exit 0 "allocate --engine trtllm" -- "$TQLAB" allocate --config config.json --engine trtllm --budget 6 \
  --verify --threads 2 -o alloc_trt.json --quiet
"$python" - alloc_trt.json <<'PY' || fail "trtllm's plan is not a dtype per layer in its range string, or loses to a rule"
import json, sys
doc = json.load(open(sys.argv[1]))
engine, budget = doc["engine"], doc["budget"]["bits"]
best = engine["best"]
assert len(best["layer_types"]) == 4 and set(best["layer_types"]) <= {"float16", "fp8", "nvfp4"}, best
ranges, layer = [], 0
for part in best["dtype"].split(","):
    span, dtype = part.split(":")
    first, _, last = span.partition("-")
    first, last = int(first), int(last or first)
    assert first == layer and last >= first, best["dtype"]
    ranges += [dtype] * (last - first + 1)
    layer = last + 1
assert ranges == best["layer_types"] and engine["invocation"] == f'kv_cache_config: {{dtype: "{best["dtype"]}"}}'
assert best["bits"] <= budget and engine["measured_as"] is None
rows = doc["same_bits"]["rows"]
kld = {name: run["metrics"]["e2e_kld"]["mean"] for run in doc["verify"]["runs"] for name in run["names"]}
pick = next(r for r in rows if r["kind"] == ("predicted" if engine["chosen_by"] == "measurement" else "engine"))
assert (engine["profile_best"] is None) == (engine["chosen_by"] == "profile"), engine
assert engine["contenders"][0] in (best["name"], engine["profile_best"]) and best["name"] in engine["contenders"]
for row in rows:
    if row["kind"] in ("uniform", "rule") and row["fits"]:
        assert pick["damage"] <= row["damage"] * (1 + 1e-12), (pick, row)
        assert kld[best["name"]] <= kld[row["name"]], (best["name"], row["name"], kld)
for name in engine["contenders"]:
    assert kld[best["name"]] <= kld[name], (best["name"], name, kld)
PY

# A random-weight model of 12 layers whose layer 5 has a planted fragile key cache
# (tools/make_fragile_checkpoint.py: a large key bias, the same for every token, which the softmax
# cancels but the quantization error does not): the allocation gives its keys the most bits of any
# unit, TensorRT-LLM's plan gives layer 5 the dearest dtype it uses, and at the same bits that plan beats
# every rule and uniform type that fits, predicted and measured.
"$python" "$repo/tools/make_fragile_checkpoint.py" fragile --layers 12 --fragile 5 || fail "make_fragile_checkpoint.py"
cat >fragile.json <<JSON
{"model": {"path": "$PWD/fragile", "tokens": "$PWD/fragile/tokens.npy", "ctx": 64, "chunks": 8},
 "metrics": {"needle": false}, "seeds": [0]}
JSON
expect_exit 0 "allocate --engine trtllm on the fragile model" -- "$TQLAB" allocate --config fragile.json \
  --engine trtllm --budget 6 --verify --threads 2 -o alloc_fragile.json --quiet
"$python" - alloc_fragile.json <<'PY' || fail "the fragile layer was not found, or a rule beat the engine's plan"
import json, sys
doc = json.load(open(sys.argv[1]))
units = doc["allocation"]["units"]
most = max(u["bits"] for u in units)
assert all(u["unit"].startswith("L5.") and u["unit"].endswith(".K") for u in units if u["bits"] == most), units
best = doc["engine"]["best"]
rank = {"nvfp4": 0, "fp8": 1, "float16": 2}
assert rank[best["layer_types"][5]] == max(rank[t] for t in best["layer_types"]), best
kld = {name: run["metrics"]["e2e_kld"]["mean"] for run in doc["verify"]["runs"] for name in run["names"]}
for row in doc["same_bits"]["rows"]:
    if row["kind"] in ("uniform", "rule") and row["fits"]:
        assert best["damage"] <= row["damage"] and kld[best["name"]] <= kld[row["name"]], (best, row, kld)
PY

# vLLM on the same model at 9 bits: the critical layer found automatically (vLLM #22195) is the planted
# one, kept unquantized by --kv-cache-dtype-skip-layers, and given the dearest format by the layer map;
# vLLM's own boundary rule fits and predicts worse.
expect_exit 0 "allocate --engine vllm on the fragile model" -- "$TQLAB" allocate --config fragile.json \
  --engine vllm --budget 9 --threads 2 -o alloc_fragile_vllm.json --quiet
"$python" - alloc_fragile_vllm.json <<'PY' || fail "vLLM's plan does not keep the fragile layer, or its rule beats it"
import json, sys
doc = json.load(open(sys.argv[1]))
best, plans = doc["engine"]["best"], doc["engine"]["plans"]
preset = min((p for p in plans if "preset" in p), key=lambda p: p["damage"])
assert preset["skip_layers"] == [5], preset
# The layer map gives layer 5 the dearest format it uses (left out of the map: the model's dtype).
layer_map = next(p for p in plans if "layer_map" in p)["layer_map"]
rank = lambda layer: {"NVFP4": 0, "FP8": 1}.get(layer_map.get(str(layer)), 2)
assert rank(5) == max(rank(layer) for layer in range(12)), layer_map
rule = next(row for row in doc["same_bits"]["rows"] if row["label"].startswith("vLLM's boundary rule (layers 0-1 and"))
assert rule["fits"] and best["damage"] <= rule["damage"], (best, rule)
PY

# rot=off: the flags carry the environment variable.
expect_exit 0 "allocate --engine llama.cpp:rot=off" -- "$TQLAB" allocate --config config.json \
  --engine llama.cpp:rot=off --budget q4_0 -o alloc_off.json --quiet
"$python" -c '
import json, sys
e = json.load(open("alloc_off.json"))["engine"]
k, v, bits = e["best"]["k"], e["best"]["v"], e["best"]["bits"]
sys.exit(0 if e["invocation"] == f"LLAMA_ATTN_ROT_DISABLE=1 -ctk {k} -ctv {v} -fa on" and bits <= 4.5 else 1)' || fail "rot=off: the invocation is not the environment variable and the best plan within 4.5 bits"
finish
