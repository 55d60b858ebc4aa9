# tqlab allocate --engine vllm / --engine modelopt: layer-wise KV recipes in a ModelOpt checkpoint's
# hf_quant_config.json (vLLM PR #56116 reads it with --kv-cache-dtype auto; Model-Optimizer PR #2272 writes
# it), on the bundled model (data/tinyllama_hf, 4 layers) with small windows, through the real binary:
# - vllm: beside the presets a layer map (fp8_e4m3, nvfp4 or the model's dtype per layer, keys and values
#   alike); the best is the least predicted damage of all; when the map is best, the invocation is
#   "--kv-cache-dtype auto" and --engine-config writes the map, every quantized layer named by its
#   attention prefix, the layers the map leaves out being those whose keys and values stay fp16;
# - modelopt: per layer one of Model-Optimizer's (K, V) pairs, every layer in the map under its
#   quant_algo (FP8, FP8_K_NVFP4_V, NVFP4), the units' formats those of their layer's pair, with --verify
#   the file that of the plan the measurement chose;
# - what cannot be written is refused: one line naming the option, exit 2, nothing written.
source "$(dirname "$0")/lib.sh" "$@"
require_numpy "to read the allocation documents"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
model="$repo/data/tinyllama_hf"

cat >config.json <<JSON
{"model": {"path": "$model", "tokens": "$model/windows.npy", "ctx": 64, "chunks": 4},
 "metrics": {"needle": false}, "seeds": [0]}
JSON
common=(allocate --config config.json --granularity layer --threads 2 --quiet)

# ---------------------------------------------------------------- refusals: one line, exit 2, nothing written
expect_refused "--engine-config without --engine" "--engine-config" "--engine vllm" -- \
  "$TQLAB" "${common[@]}" --budget 6 --engine-config map.json -o bad.json
expect_refused "--engine-config with an engine that has no layer map" "--engine-config" "llama.cpp" -- \
  "$TQLAB" "${common[@]}" --engine llama.cpp --budget 6 --engine-config map.json -o bad.json
expect_refused "--engine-config the same file as -o" "--engine-config 'bad.json'" -- \
  "$TQLAB" "${common[@]}" --engine vllm --budget 6 --engine-config bad.json -o bad.json
expect_refused "a modelopt candidate outside FP8 and NVFP4" "--candidates 'fp16'" "--engine modelopt" -- \
  "$TQLAB" "${common[@]}" --engine modelopt --candidates fp8_e4m3,fp16 --budget 6 -o bad.json
# Without fp8_e4m3 and nvfp4 among the candidates vLLM's best is a preset: no file to write.
expect_refused "--engine-config when the best plan is a preset" "--engine-config 'map.json'" \
  "hf_quant_config.json" "--kv-cache-dtype fp8" -- \
  "$TQLAB" "${common[@]}" --engine vllm --candidates vllm_fp8,fp16 --budget 9 --engine-config map.json -o bad.json
[ ! -e map.json ] || fail "a refused allocation wrote its --engine-config file"

# The plan, its file and its formats agree: check_map.py ALLOC.json WRITTEN.json ENGINE.
cat >check_map.py <<'PY'
import json, sys
doc, written, engine_name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
engine, budget = doc["engine"], doc["budget"]["bits"]
best = engine["best"]
least = min(p["damage"] for p in engine["plans"])
if engine["chosen_by"] == "profile":  # the least predicted damage of every plan (presets and the map)
    assert best["damage"] == least, engine["plans"]
else:  # --verify measured the contenders and chose another: the file is the chosen plan's all the same
    assert best["name"] in engine["contenders"] and engine["profile_best"] in engine["contenders"], engine
assert "layer_map" in best and best["bits"] <= budget, best
assert engine["invocation"] == "--kv-cache-dtype auto" and engine["loader_file"] == "hf_quant_config.json", engine
assert written == engine["loader_config"], (written, engine["loader_config"])
assert list(written) == ["producer", "quantization"] and written["producer"]["name"] == "modelopt", written
q = written["quantization"]
assert list(q) == ["kv_cache_quant_algo", "kv_cache_quantized_layers", "kv_cache_schema_version"], q
assert q["kv_cache_quant_algo"] == "MIXED_PRECISION" and q["kv_cache_schema_version"] == 1, q
expected = {f"model.layers.{layer}.self_attn": {"quant_algo": algo} for layer, algo in best["layer_map"].items()}
assert q["kv_cache_quantized_layers"] == expected, (q, best)
# The plan's formats per layer (its run at the same bits): keys and values of a mapped layer at its
# quant_algo's, the others fp16.
row = next(r for r in doc["same_bits"]["rows"] if r["kind"] == "engine")
assert row["name"] == best["name"], row
specs = {"FP8": ("fp8_e4m3", "fp8_e4m3"), "NVFP4": ("nvfp4", "nvfp4"), "FP8_K_NVFP4_V": ("fp8_e4m3", "nvfp4")}
allowed = {"FP8", "NVFP4"} if engine_name == "vllm" else set(specs)
assert set(best["layer_map"].values()) <= allowed, best
def spec(role, layer):  # a sweep run's spec of a role: one for every layer, or a default and per-layer ones
    given = row["run"][role]
    return given if isinstance(given, str) else given.get("layers", {}).get(str(layer), given["default"])
for layer in range(4):
    k, v = specs.get(best["layer_map"].get(str(layer)), ("fp16", "fp16"))
    assert spec("k", layer) == k and spec("v", layer) == v, (layer, row["run"], best)
if engine_name == "modelopt":
    assert sorted(best["layer_map"]) == ["0", "1", "2", "3"], best  # no pair leaves a layer unquantized
print(engine_name, best["name"], f'{best["bits"]:.4f} bits', "damage", best["damage"])
PY

# ---------------------------------------------------------------- vllm: the presets and the layer map
# At 6 bits no fp8 preset fits (8 bits and more on every layer): the map is the best plan.
expect_exit 0 "allocate --engine vllm --engine-config" -- "$TQLAB" "${common[@]}" --engine vllm \
  --candidates vllm_fp8,fp16,fp8_e4m3,nvfp4 --budget 6 --engine-config vllm_map.json -o alloc_vllm.json
expect_contains out.txt "run it with: --kv-cache-dtype auto" "with hf_quant_config.json beside the checkpoint"
"$python" check_map.py alloc_vllm.json vllm_map.json vllm || fail "vllm's layer map, its file or its plan disagree"
ls .*.tmp* *.tmp* 2>/dev/null | grep -q . && fail "an atomic write left a temporary file behind"

# ---------------------------------------------------------------- modelopt: a (K, V) pair per layer
# With --verify the plan the engine is told to run is the least measured of its contenders (every one a
# map here): the file follows it.
expect_exit 0 "allocate --engine modelopt --engine-config --verify" -- "$TQLAB" "${common[@]}" --engine modelopt \
  --budget 6.25 --verify --engine-config modelopt_map.json -o alloc_modelopt.json
expect_contains out.txt "engine modelopt: per layer one (K, V) pair" "run it with: --kv-cache-dtype auto"
"$python" check_map.py alloc_modelopt.json modelopt_map.json modelopt ||
  fail "modelopt's plan or its file is not its pairs"
finish
