# Valid files with extreme shapes, values and names (docs/RELIABILITY.md#hostile-but-valid-inputs), through inspect, roundtrip and
# sweep: each gives correct results or one clear exit-2 line, never a crash, a hang, or NaN/Inf
# in results (JSON is checked with a parser that refuses NaN/Infinity; tables for nan/inf).
# Files: tools/make_hostile_inputs.py. Non-UTF-8 names are tests/cli/hostile_names.sh's.
#
# Decisions pinned here:
# - A metric that cannot be measured is null (docs/SWEEP.md): the relative MSE of all-zero K/V.
# - Non-finite K/V/Q (bf16 NaN payloads) is the nonfinite error of inspect, roundtrip and sweep
#   (exit 2 naming tensor, token and channel); NaNs in other tensors are copied bit for bit.
# - A quantizer that cannot represent the values (tq's fp16 norms, q8_0/kivi's fp16 scales at
#   3e38 or 65504) is an exit-2 error naming the option that can (norm=fp32) or the limit.
source "$(dirname "$0")/lib.sh" "$@"

require_numpy "the files are made with tools/make_hostile_inputs.py"
"$python" "$(cd "$(dirname "$0")/../../tools" && pwd)/make_hostile_inputs.py" . || { echo "FAIL: generator"; exit 1; }

# finite_json FILE: FILE parses as JSON without NaN or Infinity anywhere.
finite_json() {
  "$python" - "$1" <<'PY' || fail "$1 holds NaN/Infinity or is not JSON"
import json, sys
def refuse(token):
    raise ValueError(f"non-finite number {token}")
json.load(open(sys.argv[1], encoding="utf-8"), parse_constant=refuse)
PY
}

# no_nonfinite_text FILE: no nan/inf word in a table.
no_nonfinite_text() {
  if grep -qiwE 'nan|-?inf|infinity' "$1"; then fail "$1 shows a non-finite number: $(grep -iwE 'nan|-?inf' "$1" | head -2)"; fi
}

# sweep_ok NAME [K_SPEC [V_SPEC]]: sweeps NAME.safetensors with fp8 and tq K, checks results are finite JSON.
sweep_config() {
  local name=$1 k=${2:-tq:b=3,norm=fp32} v=${3:-fp16}
  cat > "cfg_$name.json" <<JSON
{"name": "$name", "data": {"path": "$name.safetensors"}, "grid": {"k": ["fp8_e4m3", "$k"], "v": ["$v"]},
 "metrics": {"attention": {"chunk": 8}, "needle": {"trials": 4, "synth_trials": 0}}, "out": "res_$name.json"}
JSON
}
sweep_ok() {
  sweep_config "$@"
  expect_exit 0 "sweep $1" -- "$TQLAB" sweep --config "cfg_$1.json" --quiet
  finite_json "res_$1.json"
  no_nonfinite_text out.txt
}
roundtrip_ok() {
  local name=$1 spec=$2
  expect_exit 0 "roundtrip $name $spec" -- "$TQLAB" roundtrip "$name.safetensors" --k "$spec" --v "$spec" -o "rt_$name.safetensors"
  no_nonfinite_text out.txt
  "$TQLAB" inspect --json "rt_$name.safetensors" >rt.json 2>/dev/null || fail "roundtrip $name $spec: the output does not inspect cleanly"
  finite_json rt.json
}
inspect_ok() {
  expect_exit 0 "inspect $1" -- "$TQLAB" inspect "$1.safetensors"
  no_nonfinite_text out.txt
  expect_exit 0 "inspect --json $1" -- "$TQLAB" inspect --json "$1.safetensors"
  finite_json out.txt
}

# ------------------------------------------------- shapes: head dim 4096 and 1, one token, one layer
for name in dim4096 one_token one_layer; do
  inspect_ok $name
  for spec in tq:b=3 q4_0 kivi:b=2 fp8_e4m3; do roundtrip_ok $name $spec; done
  sweep_ok $name
done
"$python" -c 'import json; d = json.load(open("res_dim4096.json")); assert d["data"]["layers"][0]["key_dim"] == 4096, d["data"]' ||
  fail "sweep of dim4096 did not record head dim 4096"

inspect_ok dim1
roundtrip_ok dim1 kivi:b=2
roundtrip_ok dim1 fp8_e4m3
expect_exit 2 "roundtrip dim1 tq" -- "$TQLAB" roundtrip dim1.safetensors --k tq:b=3 --v fp16 -o never.safetensors
expect_error_line "'dim1.safetensors'" "'layers.0.k'" "head dim 1 is too small (tq needs at least 2)"
expect_exit 2 "roundtrip dim1 q4_0" -- "$TQLAB" roundtrip dim1.safetensors --k q4_0 --v fp16 -o never.safetensors
expect_error_line "head dim 1 is not a multiple of 32"
sweep_config dim1 kivi:b=2
expect_exit 0 "sweep dim1" -- "$TQLAB" sweep --config cfg_dim1.json --quiet
finite_json res_dim1.json
sweep_config dim1 tq:b=3
expect_exit 2 "sweep dim1 with tq" -- "$TQLAB" sweep --config cfg_dim1.json --quiet
expect_error_line "grid.k[1]" "tq:b=3" "head dim 1"
[ -e never.safetensors ] && fail "a refused roundtrip wrote its output"

# ------------------------------------------------- 3 kv heads, 4 q heads
inspect_ok gqa_3_4
roundtrip_ok gqa_3_4 tq:b=3
expect_exit 2 "roundtrip --q with 4 q heads over 3 kv heads" -- "$TQLAB" roundtrip gqa_3_4.safetensors --k tq:b=3 --v tq:b=3 \
  --q tq:b=3 -o never.safetensors
expect_error_line "'layers.0.q'" "4 heads, not a multiple of the 3"
sweep_config gqa_3_4
expect_exit 2 "sweep 4 q heads over 3 kv heads" -- "$TQLAB" sweep --config cfg_gqa_3_4.json --quiet
expect_error_line "'layers.0.q'" "4 heads, not a multiple of the 3"

# ------------------------------------------------- values: zeros, denormals, extremes
inspect_ok zeros
for spec in tq:b=3 q4_0 kivi:b=2 fp8_e4m3; do roundtrip_ok zeros $spec; done
sweep_ok zeros
"$python" - <<'PY' || fail "all-zero K: the relative MSE is not null, or attention is not exact"
import json
d = json.load(open("res_zeros.json"))
for run in d["runs"]:
    m = run["metrics"]
    assert m["k_rel_mse"]["mean"] is None, m["k_rel_mse"]
    assert m["attn_kl"]["mean"] == 0, m["attn_kl"]
PY
for name in denormals denormals_f32; do
  inspect_ok $name
  for spec in tq:b=3 tq:b=3,norm=fp32 q4_0 kivi:b=2 fp8_e4m3; do roundtrip_ok $name $spec; done
  sweep_ok $name
done
inspect_ok f16_extremes
for spec in q4_0 fp8_e4m3; do roundtrip_ok f16_extremes $spec; done
expect_exit 2 "roundtrip +-65504 with fp16 norms" -- "$TQLAB" roundtrip f16_extremes.safetensors --k tq:b=3 --v tq:b=3 -o never.safetensors
expect_error_line "'layers.0.k'" "beyond fp16; use norm=fp32"
expect_exit 2 "roundtrip +-65504 with kivi into f16" -- "$TQLAB" roundtrip f16_extremes.safetensors --k kivi:b=2 --v fp16 -o never.safetensors
expect_error_line "'layers.0.k'" "which f16 cannot hold"
expect_exit 2 "roundtrip +-65504 with tq, fp32 norms, into f16" -- "$TQLAB" roundtrip f16_extremes.safetensors --k tq:b=3,norm=fp32 \
  --v fp16 -o never.safetensors
expect_error_line "'layers.0.k'" "which f16 cannot hold"
sweep_ok f16_extremes
inspect_ok f32_huge
roundtrip_ok f32_huge fp8_e4m3
expect_exit 2 "roundtrip f32_huge tq:b=3,norm=fp32" -- "$TQLAB" roundtrip f32_huge.safetensors --k tq:b=3,norm=fp32 --v fp32 \
  -o never.safetensors
expect_error_line "'layers.0.k'" "has norm inf, beyond fp32"
for spec in q8_0 kivi:b=4; do
  expect_exit 2 "roundtrip f32_huge $spec" -- "$TQLAB" roundtrip f32_huge.safetensors --k $spec --v fp32 -o never.safetensors
  expect_error_line "'layers.0.k'" "fp16"
done
# Values whose squares overflow float: fp8 (a per-tensor scale) stores them; metrics stay finite.
sweep_ok f32_huge fp8_e5m2 fp32
[ -e never.safetensors ] && fail "a refused roundtrip wrote its output"

# ------------------------------------------------- bf16 NaN payloads
expect_exit 2 "inspect bf16 NaN in K" -- "$TQLAB" inspect bf16_nan.safetensors
grep -q "^error: 'bf16_nan.safetensors': tensor 'layers.0.k' holds 2 non-finite values" err.txt ||
  fail "inspect: no nonfinite error line: $(cat err.txt)"
expect_exit 2 "roundtrip bf16 NaN in K" -- "$TQLAB" roundtrip bf16_nan.safetensors --k tq:b=3 --v tq:b=3 -o never.safetensors
expect_error_line "'layers.0.k'" "non-finite value (nan)" "token 0, channel 5"
sweep_config bf16_nan
expect_exit 2 "sweep bf16 NaN in K" -- "$TQLAB" sweep --config cfg_bf16_nan.json --quiet
expect_error_line "'layers.0.k'" "non-finite value (nan) at token 0, channel 5" '"skip"'
sed -i 's/"path": "bf16_nan.safetensors"/"path": "bf16_nan.safetensors", "nonfinite": "skip"/' cfg_bf16_nan.json
expect_exit 0 "sweep bf16 NaN in K, nonfinite skip" -- "$TQLAB" sweep --config cfg_bf16_nan.json --quiet
finite_json res_bf16_nan.json
"$python" -c 'import json; d = json.load(open("res_bf16_nan.json")); s = d["data"]["skipped_vectors"]; assert s["keys"] == 2, s' ||
  fail "sweep did not count the 2 skipped key vectors"
for spec in tq:b=3 fp8_e4m3; do
  expect_exit 0 "roundtrip NaN payloads in another tensor ($spec)" -- "$TQLAB" roundtrip bf16_nan_payloads.safetensors \
    --k $spec --v $spec -o payloads.safetensors
  "$python" - <<'PY' || fail "roundtrip did not copy the NaN payloads bit for bit"
import json, struct
def tensor(path, name):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    begin, end = json.loads(data[8:8 + n])[name]["data_offsets"]
    return data[8 + n + begin:8 + n + end]
assert tensor("payloads.safetensors", "payloads") == tensor("bf16_nan_payloads.safetensors", "payloads")
PY
done
sweep_ok bf16_nan_payloads

# ------------------------------------------------- 10 000 layers of tiny tensors
start=$(date +%s)
expect_exit 0 "inspect 10000 layers" -- "$TQLAB" inspect --json layers10000.safetensors
"$python" -c 'import json; d = json.load(open("out.txt")); assert len(d["tensors"]) == 30000, len(d["tensors"])' ||
  fail "inspect did not list 30000 tensors"
expect_exit 0 "roundtrip 10000 layers" -- "$TQLAB" roundtrip layers10000.safetensors --k fp8_e4m3 --v fp8_e4m3 \
  --layers 0,9999 -o rt_layers.safetensors
expect_contains err.txt "4 tensors fake-quantized, 29996 copied unchanged"
cat > cfg_layers.json <<'JSON'
{"name": "layers", "data": {"path": "layers10000.safetensors", "layers": "0-2,9997-9999"},
 "runs": [{"k": "fp8_e4m3", "v": "q8_0"}], "metrics": {"attention": {"chunk": 2}, "needle": {"trials": 0, "synth_trials": 0}},
 "out": "res_layers.json"}
JSON
expect_exit 2 "sweep 10000 layers, q8_0 at dim 2" -- "$TQLAB" sweep --config cfg_layers.json --quiet
expect_error_line "runs[0].v" "q8_0" "head dim 2"
sed -i 's/"v": "q8_0"/"v": "fp16"/' cfg_layers.json
expect_exit 0 "sweep 10000 layers" -- "$TQLAB" sweep --config cfg_layers.json --quiet
finite_json res_layers.json
"$python" -c 'import json; d = json.load(open("res_layers.json")); assert [l["layer"] for l in d["data"]["layers"]] == [0, 1, 2, 9997, 9998, 9999], d["data"]["layers"]' ||
  fail "sweep did not use the 6 selected layers"
elapsed=$(( $(date +%s) - start ))
[ $elapsed -le 60 ] || fail "the 10000-layer file took ${elapsed} s (quadratic in the tensor count?)"

# ------------------------------------------------- names with { } .. / and spaces
inspect_ok odd_names
expect_contains out.txt '"../../etc/passwd"' '"a b"' '"{}"'
tmpl='model/blk {layer}/../'
expect_exit 0 "roundtrip with odd templates" -- "$TQLAB" roundtrip odd_names.safetensors --keys "${tmpl}k..{x}" \
  --values "${tmpl}v..{x}" --k tq:b=3 --v tq:b=3 -o rt_odd.safetensors
expect_contains err.txt "2 tensors fake-quantized, 14 copied unchanged"
"$python" - <<'PY' || fail "roundtrip of odd names did not keep every name and the copies' bytes"
import json, struct
def tensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n]); header.pop("__metadata__", None)
    return {k: data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in header.items()}
a, b = tensors("odd_names.safetensors"), tensors("rt_odd.safetensors")
assert a.keys() == b.keys(), a.keys() ^ b.keys()
changed = {k for k in a if a[k] != b[k]}
assert changed == {"model/blk 0/../k..{x}", "model/blk 0/../v..{x}"}, changed
PY
expect_exit 0 "roundtrip odd names to npz" -- "$TQLAB" roundtrip odd_names.safetensors --k fp8_e4m3 --v fp8_e4m3 -o rt_odd.npz
expect_exit 0 "inspect that npz" -- "$TQLAB" inspect --json rt_odd.npz
"$python" -c 'import json; d = json.load(open("out.txt")); assert {"../../etc/passwd", "/abs", "a b", "{"} <= {t["name"] for t in d["tensors"]}' ||
  fail "the npz copy lost an odd name"
cat > cfg_odd.json <<'JSON'
{"name": "odd", "data": {"path": "odd_names.safetensors", "keys": "model/blk {layer}/../k..{x}",
 "values": "model/blk {layer}/../v..{x}", "queries": "model/blk {layer}/../q..{x}"},
 "runs": [{"k": "tq:b=3", "v": "tq:b=3"}], "metrics": {"attention": {"chunk": 8}, "needle": {"trials": 2, "synth_trials": 0}},
 "out": "res_odd.json"}
JSON
expect_exit 0 "sweep with odd templates" -- "$TQLAB" sweep --config cfg_odd.json --quiet
finite_json res_odd.json
expect_exit 2 "template with a second {layer}" -- "$TQLAB" roundtrip odd_names.safetensors --keys 'layers.{layer}.{layer}' \
  --k tq:b=3 --v tq:b=3 -o never.safetensors
[ "$(wc -l <err.txt)" = 1 ] || fail "two {layer}: not one error line: $(cat err.txt)"

# ------------------------------------------------- layouts with repeated or unknown axes
for layout in "head head dim" "head token token dim" "head token dim dim" "seq batch head token dim" "head token chan" \
  "head token dim extra" "   " "head,token,dim"; do
  expect_exit 2 "roundtrip --layout '$layout'" -- "$TQLAB" roundtrip one_layer.safetensors --layout "$layout" --k tq:b=3 \
    --v tq:b=3 -o never.safetensors
  [ "$(grep -c . err.txt)" = 1 ] || fail "--layout '$layout': not one error line: $(cat err.txt)"
  grep -q "layout" err.txt || fail "--layout '$layout': the error does not say layout: $(cat err.txt)"
  sed "s/\"path\": \"one_layer.safetensors\"/\"path\": \"one_layer.safetensors\", \"layout\": \"$layout\"/" cfg_one_layer.json >cfg_layout.json
  expect_exit 2 "sweep data.layout '$layout'" -- "$TQLAB" sweep --config cfg_layout.json --quiet
  [ "$(grep -c . err.txt)" = 1 ] || fail "data.layout '$layout': not one error line: $(cat err.txt)"
  grep -q "layout" err.txt || fail "data.layout '$layout': the error does not say layout: $(cat err.txt)"
done
[ -e never.safetensors ] && fail "a refused roundtrip wrote its output"
finish
