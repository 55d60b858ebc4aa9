# tqlab allocate --engine llama.cpp on the bundled model (data/tinyllama_hf), through the real binary:
# - the engine's plans are its shape (one cache type for K and one for V, every layer: 7 x 7 plans of
#   its default types), the best is the least predicted damage among the plans within the budget,
#   it is never worse than a uniform type that fits (those are plans too), and the printed flags
#   name it (-ctk K -ctv V -fa on; LLAMA_ATTN_ROT_DISABLE=1 first with rot=off);
# - with --verify the plan is measured under the engine itself and in tqlab's semantics, and given
#   to llama.cpp itself (node-llama-cpp, tools/llamacpp_reference/perplexity.mjs) its flags give the
#   perplexity the engine run measured, within the llama.cpp engine's bound (2.5e-4 relative,
#   tests/cli/llamacpp_reference.sh);
# - ik_llama.cpp's plans (a type per role and others for the first N and last M layers) are never
#   worse than llama.cpp's at the same budget, and their flags name the ranges; vllm's are its presets
#   with the layers they keep unquantized;
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
expect_exit 2 "no such engine" -- "$TQLAB" allocate --config config.json --engine trtllm --budget 6 -o refused.json
expect_contains err.txt "trtllm" "llama.cpp"
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
assert best["bits"] <= budget and best["damage"] == min(p["damage"] for p in fits), best
for p in fits:
    if p["k"] == p["v"]:
        assert best["damage"] <= p["damage"], f"worse than uniform {p['k']}"
assert engine["invocation"] == f"-ctk {best['k']} -ctv {best['v']} -fa on", engine["invocation"]
names = [name for run in doc["verify"]["runs"] for name in run["names"]]
assert "llama.cpp itself" in names and best["name"] in names and "allocation" in names, names
PY
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
assert best["bits"] <= ik["budget"]["bits"] and best["damage"] <= one["engine"]["best"]["damage"] * (1 + 1e-12)
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

# vllm: a preset everywhere but kept layers (a TurboQuant preset keeps all 4 of this model's layers:
# its first and last 2), with --kv-cache-dtype and the extra kept layers as its flags.
expect_exit 0 "allocate --engine vllm" -- "$TQLAB" allocate --config config.json --engine vllm --budget 9 \
  -o alloc_vllm.json --quiet
"$python" - alloc_vllm.json <<'PY' || fail "vllm's plans are not its presets with their kept layers"
import json, sys
doc = json.load(open(sys.argv[1]))
engine = doc["engine"]
presets = {p["preset"]: p for p in engine["plans"]}
assert presets["turboquant_4bit_nc"]["kept_layers"] == [0, 1, 2, 3] if "turboquant_4bit_nc" in presets else True
assert all(p["bits"] <= doc["budget"]["bits"] for p in engine["plans"])
best = engine["best"]
assert best["preset"] in ("fp8", "fp8_per_token_head"), best  # 16-bit TurboQuant layers cannot fit 9 bits here
flags = "--kv-cache-dtype " + best["preset"]
if best["skip_layers"]:
    flags += " --kv-cache-dtype-skip-layers " + " ".join(map(str, best["skip_layers"]))
assert engine["invocation"] == flags and best["damage"] == min(p["damage"] for p in engine["plans"]), engine
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
