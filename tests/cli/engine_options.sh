# --engine and --prefill through the real binary: a sweep's model block and its runs take "engine" and
# "prefill" and give `ppl --engine` and `ppl --prefill`'s numbers; the results carry them in the run
# and its id; what an engine cannot run is one error line and exit 2, before any work.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
model="$repo/data/tinyllama_hf"
windows="$model/windows.npy"
require_numpy "the checks read the results with numpy"
common=(--model "$model" --tokens "$windows" --ctx 128 --chunks 2 --quiet)

expect_exit 0 "ppl --engine llama.cpp" -- "$TQLAB" ppl "${common[@]}" --engine llama.cpp --k q4_0 --v q8_0 -o llama.json
expect_exit 0 "ppl --engine llama.cpp:rot=off" -- "$TQLAB" ppl "${common[@]}" --engine llama.cpp:rot=off \
  --k q4_0 --v q8_0 -o llama_off.json
expect_exit 0 "ppl --prefill exact 32" -- "$TQLAB" ppl "${common[@]}" --k q4_0 --v q4_0 --prefill "exact 32" -o exact.json
expect_exit 0 "ppl, quantized prefill" -- "$TQLAB" ppl "${common[@]}" --k q4_0 --v q4_0 -o quantized.json

cat > engines.json <<JSON
{"model": {"path": "$model", "tokens": "$windows", "ctx": 128, "chunks": 2, "engine": "llama.cpp"},
 "runs": [{"k": "q4_0", "v": "q8_0"}, {"k": "q4_0", "v": "q8_0", "engine": "llama.cpp:rot=off"},
          {"k": "q4_0", "v": "q4_0", "engine": "tqlab", "prefill": "exact 32"},
          {"k": "q4_0", "v": "q4_0", "engine": "tqlab"}],
 "metrics": {"reconstruction": false, "attention": false, "needle": false}}
JSON
expect_exit 0 "sweep with engines" -- "$TQLAB" sweep --config engines.json --out swept.json --quiet
checks=$((checks + 1))
"$python" - swept.json llama.json llama_off.json exact.json quantized.json <<'PY' || fail "sweep and ppl disagree"
import json, sys
swept = json.load(open(sys.argv[1]))["runs"]
singles = [json.load(open(path))["runs"][0] for path in sys.argv[2:]]
for run, single in zip(swept, singles):
    for name in ("e2e_ppl", "e2e_kld"):
        assert run["metrics"][name]["mean"] == single["metrics"][name]["mean"], (run["id"], name)
assert swept[0]["engine"] == "llama.cpp" and "engine=llama.cpp" in swept[0]["id"], swept[0]
assert swept[1]["engine"] == "llama.cpp:rot=off", swept[1]
assert swept[2]["prefill"] == "exact 32" and "prefill=exact 32" in swept[2]["id"], swept[2]
assert "engine" not in swept[3] and "prefill" not in swept[3], swept[3]
kld = [run["metrics"]["e2e_kld"]["mean"] for run in swept]
assert kld[0] != kld[1], "the rotation changed nothing"
assert kld[2] < kld[3], f"an exact prefill should hide part of the cache's damage: KLD {kld[2]} vs {kld[3]}"
PY

# K and V given per layer run under llama.cpp, one cache type per layer and role (each layer's cache
# its own tensor, llama_kv_cache): every layer at q4_0 is the uniform run; a layer at q8_0 changes it.
# Per head they are refused: a layer's heads share its tensor's type.
cat > layered.json <<JSON
{"model": {"path": "$model", "tokens": "$windows", "ctx": 128, "chunks": 2, "engine": "llama.cpp"},
 "runs": [{"k": {"default": "q4_0", "layers": {"0": "q4_0", "3": "q4_0"}}, "v": "q8_0"},
          {"k": {"default": "q4_0", "layers": {"0": "q8_0"}}, "v": "q8_0"}],
 "metrics": {"reconstruction": false, "attention": false, "needle": false}}
JSON
expect_exit 0 "sweep with layered specs on llama.cpp" -- "$TQLAB" sweep --config layered.json --out layered.out.json \
  --quiet
checks=$((checks + 1))
"$python" - layered.out.json llama.json <<'PY' || fail "layered specs on llama.cpp are not the uniform run's numbers"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
uniform = json.load(open(sys.argv[2]))["runs"][0]
same = [run["metrics"]["e2e_kld"]["mean"] for run in runs] + [uniform["metrics"]["e2e_kld"]["mean"]]
assert same[0] == same[2] and same[1] != same[2], same
assert all(run["engine"] == "llama.cpp" for run in runs), runs
PY
cat > per_head.json <<JSON
{"model": {"path": "$model", "tokens": "$windows", "ctx": 128, "chunks": 2, "engine": "llama.cpp"},
 "runs": [{"k": {"default": "q4_0", "layers": {"1": {"default": "q4_0", "heads": {"0": "q8_0"}}}}, "v": "q8_0"}],
 "metrics": {"reconstruction": false, "attention": false, "needle": false}}
JSON
expect_refused "K per head on llama.cpp" "runs[0]" "per head" -- "$TQLAB" sweep --config per_head.json \
  --out bad.json --quiet

# What an engine cannot run: refused before any work, naming what it takes.
expect_refused "a tq spec on llama.cpp" "tq" -- "$TQLAB" ppl "${common[@]}" --engine llama.cpp --k tq:b=3 --v q8_0 \
  -o bad.json
expect_refused "a window on llama.cpp" "window" -- "$TQLAB" ppl "${common[@]}" --engine llama.cpp --k q4_0 --v q4_0 \
  --window 16 -o bad.json
expect_refused "an unknown engine" "llama.cpp, vllm" -- "$TQLAB" ppl "${common[@]}" --engine sglang --k q4_0 --v q4_0 \
  -o bad.json
expect_refused "a prefill of 0" "prefill" -- "$TQLAB" ppl "${common[@]}" --k q4_0 --v q4_0 --prefill "exact 0" -o bad.json
cat > offline.json <<JSON
{"model": {"path": "$model", "tokens": "$windows", "ctx": 128, "chunks": 2, "engine": "llama.cpp"},
 "runs": [{"k": "q4_0", "v": "q8_0"}]}
JSON
# With the offline metrics on, the model's own dump is measured with the engine's stored cache too
# (tests/cli/sweep_engine_dump.sh checks those numbers), beside the engine's end-to-end numbers.
expect_exit 0 "an engine with the offline metrics on" -- "$TQLAB" sweep --config offline.json --out offline.out.json \
  --quiet
checks=$((checks + 1))
"$python" - offline.out.json <<'PY' || fail "offline.out.json lacks the engine run's offline or end-to-end metrics"
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert run["engine"] == "llama.cpp", run.get("engine")
for name in ("k_rel_mse", "v_rel_mse", "attn_kl", "e2e_kld", "e2e_ppl_delta_pct"):
    assert run["metrics"][name]["mean"] is not None, name
PY
finish
