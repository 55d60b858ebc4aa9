# tqlab ppl --engine vllm --preset NAME and a sweep's "engine": "vllm" + "preset", through the real binary
# (engine/vllm_engine.h, docs/ENGINES.md "vLLM"):
# - the bundled model has 4 layers, all of which vLLM's TurboQuant presets keep at the model's precision
#   (two at each end, fp16): with the default prefill (one prefill of each chunk, its own K/V exact)
#   every TurboQuant preset gives KLD 0 there, with "quantized" exactly `ppl --k fp16 --v fp16`;
# - the fp8 presets quantize every layer and read everything from the cache: any prefill gives the
#   numbers of `ppl --k vllm_fp8 --v vllm_fp8` (tqlab's engine, quantized prefill), KLD > 0;
# - on a random 6-layer Llama (layers 2 and 3 quantized) a TurboQuant preset is, run for run, the
#   tqlab engine with per-layer specs (fp16 at layers 0, 1, 4, 5) and the equivalent prefill:
#   "quantized" = "quantized"; "exact 160" of a 320-token chunk (both pieces longer than 128 tokens,
#   each reads its own K/V exact) = "exact 160"; the default (one prefill of the chunk) is KLD 0;
#   "exact 64" (later pieces of 64 <= 128 tokens read the cache) is neither;
# - what the engine cannot run is one error line and exit 2, before any work.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
model="$repo/data/tinyllama_hf"
require_numpy "tools/make_checkpoints.py writes the 6-layer model; the checks read the results with Python"
head -c 4096 /usr/share/common-licenses/GPL-3 >text.txt
common=(--model "$model" --text text.txt --ctx 256 --chunks 4 --quiet)

# metrics FILE...: "e2e_ppl e2e_kld" of each document's first run, one line per file.
metrics() {
  "$python" - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    m = json.load(open(path))["runs"][0]["metrics"]
    print(repr(m["e2e_ppl"]["mean"]), repr(m["e2e_kld"]["mean"]))
PY
}

# ---------------------------------------------------------------- the bundled model
expect_exit 0 "ppl --k/--v fp16" -- "$TQLAB" ppl "${common[@]}" --k fp16 --v fp16 -o fp16.json
for preset in turboquant_k8v4 turboquant_4bit_nc turboquant_k3v4_nc turboquant_3bit_nc; do
  expect_exit 0 "ppl $preset" -- "$TQLAB" ppl "${common[@]}" --engine vllm --preset "$preset" -o "$preset.json"
  expect_contains out.txt "prefill=exact 256 is engine vllm:preset=$preset's default"
  expect_exit 0 "ppl $preset, quantized prefill" -- "$TQLAB" ppl "${common[@]}" --engine vllm --preset "$preset" \
    --prefill quantized -o "$preset-quantized.json"
  expect_contains out.txt "engine vllm:preset=$preset keeps layers 0, 1, 2, 3 of this 4-layer model at fp16: no layer"
  checks=$((checks + 1))
  "$python" - "$preset.json" "$preset-quantized.json" fp16.json <<'PY' || fail "$preset: not fp16 on every layer of 4"
import json, sys
default, quantized, fp16 = (json.load(open(path))["runs"][0] for path in sys.argv[1:])
m = default["metrics"]
assert m["e2e_kld"]["mean"] == 0 and m["e2e_kld_max"]["mean"] == 0 and m["e2e_ppl_delta_pct"]["mean"] == 0, m
for name in ("e2e_ppl", "e2e_kld"):
    assert quantized["metrics"][name]["mean"] == fp16["metrics"][name]["mean"], (name, quantized, fp16)
assert quantized["metrics"]["e2e_kld"]["mean"] > 0  # fp16 is not float32
assert default["bits"]["bits_kv"] == quantized["bits"]["bits_kv"] == 16, default["bits"]  # every layer at fp16
PY
done

for preset in fp8 fp8_per_token_head; do
  spec=vllm_fp8
  [ "$preset" = fp8_per_token_head ] && spec=vllm_fp8:scale=token_head
  expect_exit 0 "ppl $preset" -- "$TQLAB" ppl "${common[@]}" --engine vllm --preset "$preset" -o "$preset.json"
  expect_exit 0 "ppl $preset, exact 64" -- "$TQLAB" ppl "${common[@]}" --engine vllm --preset "$preset" \
    --prefill exact 64 -o "$preset-64.json"
  expect_exit 0 "ppl --k/--v $spec" -- "$TQLAB" ppl "${common[@]}" --k "$spec" --v "$spec" -o "$preset-specs.json"
  checks=$((checks + 1))
  same=$(metrics "$preset.json" "$preset-64.json" "$preset-specs.json" | sort -u | wc -l)
  [ "$same" = 1 ] || fail "$preset: the preset, its exact-64 prefill and --k/--v $spec differ: $(metrics \
    "$preset.json" "$preset-64.json" "$preset-specs.json" | tr '\n' ';')"
  "$python" - "$preset.json" "$preset" "$spec" <<'PY' || fail "$preset: the run is not recorded as expected"
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert run["metrics"]["e2e_kld"]["mean"] > 0, run["metrics"]["e2e_kld"]
assert run["engine"] == "vllm:preset=" + sys.argv[2] and run["prefill"] == "exact 256", run
want = f"k={sys.argv[3]} v={sys.argv[3]} window=0 sink=0 engine=vllm:preset={sys.argv[2]} prefill=exact 256"
assert run["id"] == want, run["id"]
PY
done

# The model block's engine and preset are its runs', which may leave k and v out: ppl's numbers and ids.
cat >block.json <<JSON
{"model": {"path": "$model", "text": "text.txt", "ctx": 256, "chunks": 4, "engine": "vllm", "preset": "fp8"},
 "runs": [{}, {"preset": "fp8_per_token_head"}],
 "metrics": {"reconstruction": false, "attention": false, "needle": false}}
JSON
expect_exit 0 "sweep with the preset in the model block" -- "$TQLAB" sweep --config block.json --out block_out.json \
  --quiet
checks=$((checks + 1))
"$python" - block_out.json fp8.json fp8_per_token_head.json <<'PY' || fail "the model block's preset is not ppl's"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
for run, path in zip(runs, sys.argv[2:]):
    single = json.load(open(path))["runs"][0]
    assert run["id"] == single["id"] and run["metrics"] == single["metrics"], (run["id"], single["id"])
PY

# ---------------------------------------------------------------- a 6-layer model: TurboQuant at work
"$python" "$repo/tools/make_checkpoints.py" six --big --layers 6 --hidden 256 --intermediate 256 --heads 4 \
  --kv-heads 2 --vocab 320 >/dev/null || fail "make_checkpoints.py failed"
"$python" -c 'import numpy as np; np.save("tokens.npy", np.random.default_rng(7).integers(0, 320, 640).astype("<i4"))'
key=vllm_tq_key:b=4,nc
value=vllm_uniform:b=4
layered() {  # layered SPEC: SPEC on layers 2 and 3, fp16 on the two at each end
  echo "{\"default\": \"$1\", \"layers\": {\"0\": \"fp16\", \"1\": \"fp16\", \"4\": \"fp16\", \"5\": \"fp16\"}}"
}
cat >six.json <<JSON
{"model": {"path": "six", "tokens": "tokens.npy", "ctx": 320, "chunks": 2},
 "runs": [{"engine": "vllm", "preset": "turboquant_4bit_nc"},
          {"engine": "vllm", "preset": "turboquant_4bit_nc", "prefill": "quantized"},
          {"engine": "vllm", "preset": "turboquant_4bit_nc", "prefill": "exact 160"},
          {"engine": "vllm", "preset": "turboquant_4bit_nc", "prefill": "exact 64"},
          {"k": $(layered $key), "v": $(layered $value)},
          {"k": $(layered $key), "v": $(layered $value), "prefill": "exact 160"},
          {"k": $(layered $key), "v": $(layered $value), "prefill": "exact 64"},
          {"engine": "vllm:preset=turboquant_k8v4", "k": "vllm_fp8", "v": "$value", "prefill": "quantized"},
          {"engine": "vllm:skip=2+3", "preset": "fp8"},
          {"k": {"default": "vllm_fp8", "layers": {"2": "fp16", "3": "fp16"}},
           "v": {"default": "vllm_fp8", "layers": {"2": "fp16", "3": "fp16"}}}],
 "metrics": {"reconstruction": false, "attention": false, "needle": false}}
JSON
expect_exit 0 "sweep of vllm presets, 6 layers" -- "$TQLAB" sweep --config six.json --out six_out.json --quiet
expect_exit 0 "ppl vllm exact 64 on the 6-layer model" -- "$TQLAB" ppl --model six --tokens tokens.npy --ctx 320 \
  --chunks 2 --engine vllm --preset turboquant_4bit_nc --prefill exact 64 -o six_64.json --quiet
checks=$((checks + 1))
"$python" - six_out.json six_64.json <<'PY' || fail "the TurboQuant preset is not its per-layer specs and prefill"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
single = json.load(open(sys.argv[2]))["runs"][0]
m = [(r["metrics"]["e2e_ppl"]["mean"], r["metrics"]["e2e_kld"]["mean"]) for r in runs]
default, quantized, exact160, exact64, specs, specs160, specs64, k8v4, fp8_skip, fp8_specs = m
assert default[1] == 0, f"one prefill of the chunk reads no quantized key: KLD {default[1]}"
assert quantized == specs and quantized[1] > 0, (quantized, specs)
assert exact160 == specs160 and exact160[1] > 0, (exact160, specs160)
# Pieces of 64 after the first read their own K/V from the cache: more damage than pieces of 160, less
# than every query reading the cache (measured: KLD 1.1e-4 < 1.7e-4 < 2.2e-4).
assert exact160[1] < exact64[1] < quantized[1], (exact160, exact64, quantized)
# tqlab's "exact 64" reads every piece's own K/V exact, vLLM's only the first one's.
assert specs64[1] < exact64[1], (specs64, exact64)
assert (single["metrics"]["e2e_ppl"]["mean"], single["metrics"]["e2e_kld"]["mean"]) == exact64, "ppl and sweep differ"
assert k8v4[1] > 0
# skip=2+3 (vLLM's --kv-cache-dtype-skip-layers 2 3) keeps those layers at fp16; fp8 reads the cache.
assert fp8_skip == fp8_specs and fp8_skip[1] > 0, (fp8_skip, fp8_specs)
assert runs[8]["engine"] == "vllm:preset=fp8,skip=2+3", runs[8]
assert runs[0]["engine"] == "vllm:preset=turboquant_4bit_nc" and runs[0]["prefill"] == "exact 320", runs[0]
assert runs[0]["id"] == "k=vllm_tq_key:b=4,nc v=vllm_uniform:b=4 window=0 sink=0 " \
    "engine=vllm:preset=turboquant_4bit_nc prefill=exact 320", runs[0]["id"]
assert runs[3]["prefill"] == "exact 64" and runs[7]["engine"] == "vllm:preset=turboquant_k8v4", runs
# "quantized" is not a vllm run's default: it is written out, in the run and its id.
assert runs[1]["prefill"] == "quantized" and runs[1]["id"].endswith(" prefill=quantized"), runs[1]
assert "prefill" not in runs[4] and "prefill=" not in runs[4]["id"], runs[4]  # tqlab's quantized: as before
# Two quantized layers of six at 4.25 + 4.5 bits (keys: 4 bits and an fp16 norm; values: 4 bits and
# an fp16 scale and zero, per 64), four at 16.
assert abs(runs[1]["bits"]["bits_kv"] - (2 * (4.25 + 4.5) / 2 + 4 * 16) / 6) < 1e-9, runs[1]["bits"]
PY

# Two shards merge into the whole: each shard's config, read back, names the same runs.
expect_exit 0 "shard 1/2" -- "$TQLAB" sweep --config six.json --shard 1/2 --out shard1.json --quiet
expect_exit 0 "shard 2/2" -- "$TQLAB" sweep --config six.json --shard 2/2 --out shard2.json --quiet
expect_exit 0 "merge the shards" -- "$TQLAB" merge shard1.json shard2.json -o merged.json --quiet
checks=$((checks + 1))
"$python" - six_out.json merged.json <<'PY' || fail "the merged shards are not the whole sweep"
import json, sys
whole, merged = (json.load(open(path))["runs"] for path in sys.argv[1:])
assert [(r["id"], r["metrics"]) for r in whole] == [(r["id"], r["metrics"]) for r in merged]
PY

# ---------------------------------------------------------------- refused, one line each
expect_refused "vllm without a preset" "no preset" "turboquant_4bit_nc" -- "$TQLAB" ppl "${common[@]}" \
  --engine vllm -o bad.json
expect_refused "--k against the preset" "--k/--v" "'q4_0' where the preset defines 'vllm_fp8'" -- "$TQLAB" ppl \
  "${common[@]}" --engine vllm --preset fp8 --k q4_0 -o bad.json
expect_refused "a preset with llama.cpp" "--preset 'fp8'" "presets are engine vllm's" "engine llama.cpp takes" -- \
  "$TQLAB" ppl "${common[@]}" --engine llama.cpp --preset fp8 --k q4_0 --v q4_0 -o bad.json
expect_refused "a preset with tqlab" "presets are engine vllm's" -- "$TQLAB" ppl "${common[@]}" --preset fp8 -o bad.json
expect_refused "an unknown preset" "--preset 'fp4': unknown vLLM preset 'fp4'" "fp8_per_token_head" -- \
  "$TQLAB" ppl "${common[@]}" --engine vllm --preset fp4 -o bad.json
expect_refused "rot=off on vllm" "unknown option 'rot'" "preset=NAME" -- "$TQLAB" ppl "${common[@]}" \
  --engine vllm:rot=off --preset fp8 -o bad.json
expect_refused "a skip layer the model lacks" "skip layer 4" "layers 0..3" -- "$TQLAB" ppl "${common[@]}" \
  --engine vllm:skip=4 --preset fp8 -o bad.json
expect_refused "a window on vllm" "window 16" "engine vllm" -- "$TQLAB" ppl "${common[@]}" --engine vllm --preset fp8 \
  --window 16 -o bad.json
cat >bad_preset.json <<JSON
{"model": {"path": "$model", "text": "text.txt", "ctx": 256, "chunks": 2},
 "runs": [{"k": "q4_0", "v": "q4_0", "engine": "llama.cpp", "preset": "fp8"}],
 "metrics": {"reconstruction": false, "attention": false, "needle": false}}
JSON
expect_refused "a run's preset with llama.cpp" "runs[0].preset" "presets are engine vllm's" -- "$TQLAB" sweep \
  --config bad_preset.json --out bad.json
cat >bad_specs.json <<JSON
{"model": {"path": "$model", "text": "text.txt", "ctx": 256, "chunks": 2, "engine": "vllm", "preset": "fp8"},
 "runs": [{"k": "vllm_fp8", "v": "vllm_uniform:b=4"}],
 "metrics": {"reconstruction": false, "attention": false, "needle": false}}
JSON
expect_refused "a run's v against the model block's preset" "'vllm_uniform:b=4' where the preset defines 'vllm_fp8'" \
  -- "$TQLAB" sweep --config bad_specs.json --out bad.json
expect_refused "roundtrip with a preset" "--engine vllm:preset=fp8" "--k vllm_fp8 --v vllm_fp8" -- "$TQLAB" roundtrip \
  missing.safetensors -o bad.json --engine vllm:preset=fp8 --k vllm_fp8 --v vllm_fp8
finish
