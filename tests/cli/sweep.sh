# tqlab sweep through the real binary: a small sweep end to end (relative paths against the
# config's folder, the JSON document, the table), the same bytes for --threads 1 and 2, flags
# over the config, nonfinite data refused or skipped, and every bad input exit 2 with one line
# naming the key path or file, before any compute and without leaving a results file behind.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- *.safetensors *.json *.txt *.tmp-* study out
python=/usr/bin/python3
[ -x "$python" ] || { echo "SKIP: $python is absent (the checks read JSON with it)"; exit 77; }

mkdir -p study out
expect_exit 0 "synth" -- "$TQLAB" synth -o small.safetensors --layers 2 --kv-heads 2 --q-heads 4 --tokens 96 --dim 64
cat > study/config.json <<'JSON'
{"name": "cli-small",
 "data": {"path": "../small.safetensors"},
 "grid": {"k": ["tq:b=3", "tq:b=3,nc"], "v": ["tq:b=3"], "window": [0, 16]},
 "runs": [{"k": "q4_0", "v": "q8_0", "sink": 4}],
 "metrics": {"attention": {"chunk": 64}, "needle": {"trials": 32, "synth_trials": 2}},
 "seeds": [0, 1],
 "out": "../out/result.json"}
JSON

# ---------------------------------------------------------------- a sweep end to end
expect_exit 0 "sweep" -- "$TQLAB" sweep --config study/config.json --threads 1 --quiet
[ -f out/result.json ] || fail "the config's out (relative to its folder) was not written"
expect_contains out.txt "k_rel_mse" "attn_kl" "needle_top1@1" "tq:b=3,nc" "q4_0"
[ "$(grep -c 'tq:b=3 ' out.txt)" -ge 2 ] || fail "table lacks the tq:b=3 rows: $(cat out.txt)"
[ -s err.txt ] && fail "--quiet still wrote to stderr: $(head -2 err.txt)"
"$python" - out/result.json <<'PY' || fail "results document is not as expected"
import json, math, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "tqlab.sweep/1"
assert d["config"]["data"]["path"] == "../small.safetensors"
assert len(d["data"]["sha256"]) == 64 and d["data"]["bytes"] > 0
runs = d["runs"]
assert [r["id"] for r in runs] == [
    "k=tq:b=3 v=tq:b=3 window=0 sink=0", "k=tq:b=3 v=tq:b=3 window=16 sink=0",
    "k=tq:b=3,nc v=tq:b=3 window=0 sink=0", "k=tq:b=3,nc v=tq:b=3 window=16 sink=0",
    "k=q4_0 v=q8_0 window=0 sink=4"], [r["id"] for r in runs]
for r in runs:
    m = r["metrics"]
    for name in ["k_rel_mse", "v_rel_mse", "k_nmse", "v_nmse", "k_cos", "v_cos", "attn_kl", "attn_kl_p95",
                 "attn_top1", "attn_top5", "attn_cos", "attn_out_rel_err", "ip_bias", "ip_rmse",
                 "needle_top1@0.5", "needle_weight_ratio@4", "needle_synth_weight", "needle_synth_out_err"]:
        value = m[name]
        assert value["mean"] is not None and math.isfinite(value["mean"]), (r["id"], name)
        assert len(value["per_seed"]) == 2 and value["std"] is not None, (r["id"], name)
    assert len(r["per_layer"]["layer"]) == 2 and len(r["per_layer"]["attn_kl"]) == 2
assert abs(runs[0]["bits"]["bits_k"] - 3.25) < 1e-12, runs[0]["bits"]          # 3 + 16/64
assert runs[1]["bits"]["bits_kv_effective"] > runs[1]["bits"]["bits_kv"]        # window at 16 bits
assert runs[1]["metrics"]["attn_kl"]["mean"] < runs[0]["metrics"]["attn_kl"]["mean"]  # exact recent keys help
assert abs(runs[4]["bits"]["bits_k"] - 4.5) < 1e-12 and abs(runs[4]["bits"]["bits_v"] - 8.5) < 1e-12
PY

# ---------------------------------------------------------------- thread counts, flags
expect_exit 0 "sweep --threads 2" -- "$TQLAB" sweep --config study/config.json --threads 2 --quiet --out out/threads2.json
# Every number, per seed, layer and head included, the same to the last bit.
expect_exit 0 "--threads 2 gives the same numbers" -- "$TQLAB" diff out/result.json out/threads2.json --rtol 0 --atol 0
expect_exit 0 "flags override" -- "$TQLAB" sweep --config study/config.json --quiet --out out/flags.json \
  --seeds 5 --layers 1 --data small.safetensors
"$python" - out/flags.json <<'PY' || fail "flags did not override the config"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["config"]["seeds"] == [5] and d["config"]["data"]["layers"] == [1], d["config"]
assert d["data"]["path"] == "small.safetensors"
assert d["runs"][0]["per_layer"]["layer"] == [1]
PY

# ---------------------------------------------------------------- nonfinite data
"$python" - <<'PY'
import json, struct
def write(path, tensors):
    header, blobs, offset = {"__metadata__": {"layout": "seq head token dim"}}, [], 0
    for name, shape, values in tensors:
        blob = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob); blobs.append(blob)
    text = json.dumps(header).encode(); text += b" " * (-len(text) % 8)
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
n = 1 * 2 * 24 * 8
values = [((i * 37) % 17 - 8) / 4.0 for i in range(n)]
bad = list(values); bad[1 * 24 * 8 + 5 * 8 + 3] = float("nan")   # head 1, token 5, channel 3
write("nan.safetensors", [("layers.0.k", [1, 2, 24, 8], bad), ("layers.0.v", [1, 2, 24, 8], values),
                          ("layers.0.q", [1, 2, 24, 8], values)])
PY
cat > nan.json <<'JSON'
{"data": {"path": "nan.safetensors"}, "grid": {"k": ["tq:b=3"], "v": ["tq:b=3"]},
 "metrics": {"needle": {"trials": 4, "synth_trials": 0}}, "out": "nan-result.json"}
JSON
expect_exit 2 "NaN in keys" -- "$TQLAB" sweep --config nan.json --quiet
expect_error_line "nan.safetensors" "layers.0.k" "head 1" "token 5, channel 3" "nonfinite"
[ -e nan-result.json ] && fail "a failed sweep left nan-result.json"
sed 's/"path": "nan.safetensors"/"path": "nan.safetensors", "nonfinite": "skip"/' nan.json >skip.json
expect_exit 0 "NaN skipped" -- "$TQLAB" sweep --config skip.json --quiet
"$python" -c 'import json; d = json.load(open("nan-result.json")); s = d["data"]["skipped_vectors"]; assert s == {"keys": 1, "values": 0, "queries": 0}, s' \
  || fail "skipped vectors not counted"

# ---------------------------------------------------------------- bad input: exit 2, one line, nothing written
# bad_config NAME PYTHON-EDIT NEEDLE...: the study config edited by PYTHON-EDIT (on dict c) is
# refused with one line holding every NEEDLE (config errors name study/bad.json, data errors the file).
bad_config() {
  local name=$1 edit=$2
  shift 2
  "$python" -c "import json; c = json.load(open('study/config.json')); $edit; c['out'] = '../out/bad.json'; json.dump(c, open('study/bad.json', 'w'))"
  expect_exit 2 "$name" -- "$TQLAB" sweep --config study/bad.json --quiet
  expect_error_line "$@"
  [ -e out/bad.json ] && fail "$name: a results file was left behind" && rm -f out/bad.json
}
bad_config "unknown key" "c['metric'] = {}" "study/bad.json" "unknown key 'metric'"
bad_config "wrong type" "c['grid']['window'] = 'all'" "study/bad.json" "grid.window" "a list"
bad_config "bad spec" "c['grid']['k'].append('tq:b=0')" "study/bad.json" "grid.k[2]" "tq:b=0"
bad_config "head dim" "c['grid']['v'] = ['tq:b=3', 'tq:b=3,block=48']" "study/bad.json" "grid.v[1]" "head dim 64"
bad_config "empty grid" "c['grid']['k'] = []" "study/bad.json" "grid.k" "empty"
bad_config "same run twice" "c['runs'].append({'k': 'q4_0', 'v': 'q8_0', 'sink': 4})" "study/bad.json" "runs[0]" "runs[1]" "same run"
bad_config "missing template" "c['data']['queries'] = 'layers.{layer}.query'; c['data']['values'] = 'blocks.{layer}.v'" \
  "small.safetensors" "blocks.0.v" "blocks.{layer}.v"
bad_config "missing layer" "c['data']['layers'] = [0, 3]" "small.safetensors" "layer 3" "layers.{layer}.k"
bad_config "missing data" "c['data']['path'] = '../nothing.safetensors'" "nothing.safetensors"
echo '{"data": ' >study/broken.json
expect_exit 2 "invalid JSON" -- "$TQLAB" sweep --config study/broken.json
expect_error_line "study/broken.json" "not valid JSON" "line"
expect_exit 2 "missing config" -- "$TQLAB" sweep --config study/none.json
expect_error_line "study/none.json"
expect_exit 2 "output folder missing" -- "$TQLAB" sweep --config study/config.json --out nowhere/r.json
expect_error_line "nowhere"
expect_exit 2 "output is the input" -- "$TQLAB" sweep --config study/config.json --out small.safetensors
expect_error_line "small.safetensors" "which the command reads"
expect_exit 2 "negative seed" -- "$TQLAB" sweep --config study/config.json --seeds 1,-1
expect_error_line "--seeds" "'-1'"
expect_exit 2 "bad layers flag" -- "$TQLAB" sweep --config study/config.json --layers 0-x
expect_error_line "0-x"
expect_exit 2 "no output anywhere" -- "$TQLAB" sweep --config nan.json --quiet --out ""
expect_exit 2 "missing --config" -- "$TQLAB" sweep
expect_error_line "--config"

finish
