# tqlab list shows the registry; tqlab roundtrip writes fake-quantized tensors
# with the input's names, shapes and dtypes, prints bits and relative MSE,
# is deterministic for a seed, and leaves nothing behind on errors.
source "$(dirname "$0")/lib.sh" "$@"
# The scratch directory outlives a run: start from nothing of ours.
rm -f -- *.safetensors *.npz *.npy *.txt *.json *.tmp-*

have_python=0
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import json' 2>/dev/null && have_python=1

# safetensors_equal A B NAME...: the named tensors hold the same dtype, shape and
# bytes in both files (plain Python: the header is JSON, the data raw bytes).
safetensors_equal() {
  /usr/bin/python3 - "$@" <<'PY'
import json, struct, sys

def tensors(path):
    data = open(path, "rb").read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    header.pop("__metadata__", None)
    base = 8 + size
    return {name: (entry["dtype"], entry["shape"], data[base + entry["data_offsets"][0]:base + entry["data_offsets"][1]])
            for name, entry in header.items()}

a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
for name in sys.argv[3:]:
    if a[name] != b[name]:
        sys.exit(f"{name} differs between {sys.argv[1]} and {sys.argv[2]}")
PY
}

# ---------------------------------------------------------------- list

expect_exit 0 "list" -- "$TQLAB" list
expect_contains out.txt tq kivi q4_0 q4_1 q8_0 fp8_e4m3 fp8_e5m2 fp16 bf16 fp32 \
  "b=1..8" "block=2..4096" "rot=hadamard|hadamard2|haar|none" "qjl=prod|extra" "outliers=K@B2" "group=" "bits/value: b + "
[ "$(grep -c 'bits/value:' out.txt)" -ge 10 ] || fail "list shows fewer than 10 bits-per-value formulas"

expect_exit 0 "list --json" -- "$TQLAB" list --json
if [ "$have_python" = 1 ]; then
  /usr/bin/python3 - out.txt <<'PY' || fail "list --json does not describe the registry"
import json, sys
listing = json.load(open(sys.argv[1]))
assert listing["schema"] == "tqlab.list/1"
methods = {m["name"]: m for m in listing["methods"]}
for name in ["tq", "kivi", "q4_0", "q4_1", "q8_0", "fp8_e4m3", "fp8_e5m2", "fp16", "bf16", "fp32"]:
    assert name in methods, name
for m in methods.values():
    assert m["summary"] and m["bits_formula"] and m["example_specs"], m
options = {o["name"]: o for o in methods["tq"]["options"]}
for name in ["b", "block", "rot", "cb", "nc", "debias", "qjl", "qjl_m", "norm", "center", "outliers"]:
    assert name in options and options[name]["summary"], name
assert options["nc"]["flag"] and not options["b"]["flag"]
PY
fi

# ---------------------------------------------------------------- roundtrip on synthetic tensors

expect_exit 0 "synth" -- "$TQLAB" synth -o kv.safetensors --layers 2 --tokens 128 --dim 64
expect_exit 0 "roundtrip tq:b=3" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 -o out.safetensors
cp out.txt table.txt
expect_contains table.txt "bits/value" "relative MSE" "layers.0.k" "layers.1.v"
grep -q "layers.0.q" table.txt && fail "queries were quantized without --q"
# Bits: 3 bits of codes + one fp16 norm per 64 values = 3.25. Relative MSE of
# keys and values near the b=3 Lloyd-Max distortion (0.0345 in the Gaussian
# limit; measured 0.029-0.030 for keys, 0.033-0.034 for values over seeds).
awk '/^layers\.[0-9]+\.[kv] / {
       bits = $(NF - 1); mse = $NF
       if (bits != 3.25) { print "bits " bits " for " $1; bad = 1 }
       if ($2 == "key" && (mse < 0.026 || mse > 0.034)) { print "key relative MSE " mse " for " $1; bad = 1 }
       if ($2 == "value" && (mse < 0.030 || mse > 0.038)) { print "value relative MSE " mse " for " $1; bad = 1 }
       rows++ }
     END { if (rows != 4) { print rows " rows"; bad = 1 } exit bad }' table.txt >check.txt ||
  fail "roundtrip table: $(cat check.txt)"

expect_exit 0 "inspect input" -- "$TQLAB" inspect kv.safetensors --json
mv out.txt in.json
expect_exit 0 "inspect output" -- "$TQLAB" inspect out.safetensors --json
mv out.txt out.json
if [ "$have_python" = 1 ]; then
  /usr/bin/python3 - in.json out.json <<'PY' || fail "roundtrip output does not match the input's names, shapes and dtypes"
import json, sys
a, b = (json.load(open(path)) for path in sys.argv[1:])
shape = lambda report: [(t["name"], t["dtype"], t["shape"]) for t in report["tensors"]]
assert shape(a) == shape(b), (shape(a), shape(b))
meta = b["metadata"]
assert meta["tqlab.roundtrip.k"] == "tq:b=3" and meta["tqlab.roundtrip.v"] == "tq:b=3", meta
assert meta["tqlab.roundtrip.seed"] == "0" and "tqlab.version" in meta, meta
assert meta["generator"] == a["metadata"]["generator"], meta  # the input's metadata is kept
PY
  safetensors_equal kv.safetensors out.safetensors layers.0.q layers.1.q || fail "queries not copied bit-exactly"
fi

# fp16 on fp16 tensors changes nothing.
expect_exit 0 "roundtrip fp16" -- "$TQLAB" roundtrip kv.safetensors --k fp16 --v fp16 --q fp16 -o same.safetensors
[ "$(grep -c '  16  *0$' out.txt)" = 6 ] || fail "fp16 roundtrip should print 16 bits and relative MSE 0 for 6 tensors"
if [ "$have_python" = 1 ]; then
  safetensors_equal kv.safetensors same.safetensors layers.0.k layers.0.v layers.0.q layers.1.k layers.1.v layers.1.q ||
    fail "fp16 roundtrip of fp16 tensors is not bit-exact"
fi

# Determinism: same seed, same bytes; another seed, other bytes.
expect_exit 0 "roundtrip again" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 -o again.safetensors
cmp -s out.safetensors again.safetensors || fail "same seed gave different files"
expect_exit 0 "roundtrip seed 1" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 -o seed1.safetensors --seed 1
# (The files differ by the recorded seed alone; the tensors must differ too.)
if [ "$have_python" = 1 ]; then
  safetensors_equal out.safetensors seed1.safetensors layers.0.k 2>/dev/null && fail "different seeds gave the same keys"
fi

# One layer, queries too, npz output: the other layer is copied unchanged.
expect_exit 0 "roundtrip --layers 1 --q" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=4 --v kivi:b=2 --q tq:b=8 \
  --layers 1 -o layer1.npz
expect_contains out.txt "layers.1.q" "query" "kivi:b=2"
grep -q "layers.0" out.txt && fail "--layers 1 quantized layer 0"
expect_exit 0 "inspect npz output" -- "$TQLAB" inspect layer1.npz
expect_contains out.txt "layers.0.k" "layers.1.q" "[4, 128, 64]" "[8, 128, 64]"

# Streamed output: the same bytes for every thread count; numpy reads the npz (zipfile checks
# every member's CRC-32, which the streamed writer combines from the pieces it wrote).
for threads in 1 2 3; do
  expect_exit 0 "roundtrip --threads $threads" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=4 --v kivi:b=2 \
    --q tq:b=8 --layers 1 -o threads$threads.npz --threads $threads --quiet
  cmp -s layer1.npz threads$threads.npz || fail "--threads $threads wrote other bytes than the default"
  [ -s err.txt ] && fail "--quiet still wrote to stderr: $(cat err.txt)"
  rm -f threads$threads.npz
done
if [ "$have_python" = 1 ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  /usr/bin/python3 - layer1.npz <<'PY' || fail "numpy cannot read the streamed npz"
import sys, zipfile
import numpy as np
with zipfile.ZipFile(sys.argv[1]) as archive:
    assert archive.testzip() is None, "a member's CRC-32 does not match"
arrays = np.load(sys.argv[1])
assert arrays["layers.1.q"].shape == (8, 128, 64), arrays["layers.1.q"].shape
assert np.isfinite(arrays["layers.1.k"]).all()
PY
fi
expect_exit 2 "negative --threads" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 -o bad.npz --threads -1
expect_error_line "--threads"
# Writing over the input would replace the original tensors: refused, the input left as it was.
sha_before=$(sha256sum kv.safetensors)
ln -sf kv.safetensors link.safetensors
expect_exit 2 "output is the input" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 -o ./kv.safetensors
expect_error_line "is the input" "choose another output"
expect_exit 2 "output is a link to the input" -- "$TQLAB" roundtrip link.safetensors --k tq:b=3 --v tq:b=3 -o kv.safetensors
expect_error_line "is the input"
[ "$(sha256sum kv.safetensors)" = "$sha_before" ] || fail "roundtrip changed its input"
rm -f link.safetensors

# ---------------------------------------------------------------- the real dump

real="$SHARED_DATA/stories260k_qkv.safetensors"
if [ -f "$real" ]; then
  expect_exit 0 "roundtrip real dump tq:b=4" -- "$TQLAB" roundtrip "$real" --k tq:b=4 --v tq:b=4 -o real.safetensors
  # Head dim 8: 4 bits of codes + one fp16 norm per 8 values = 6.
  [ "$(grep -c '^layers\.[0-4]\.[kv] .* 6  *0\.0' out.txt)" = 10 ] ||
    fail "real dump: expected 10 K/V rows at 6 bits with a relative MSE below 0.1: $(cat out.txt)"
  expect_contains err.txt 'seq head token dim'
  expect_exit 2 "roundtrip real dump q4_0" -- "$TQLAB" roundtrip "$real" --k q4_0 --v tq:b=4 -o real_q4.safetensors
  expect_error_line "q4_0" "head dim 8" "layers.0.k" "$real"
  [ -e real_q4.safetensors ] && fail "a failed roundtrip left its output"
else
  echo "skipping the real-dump checks: $real is absent" >&2
fi

# ---------------------------------------------------------------- errors leave nothing behind

expect_exit 2 "bad spec" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=9 --v tq:b=3 -o bad.safetensors
expect_error_line "tq:b=9" "1..8"
expect_exit 2 "unknown option" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3,wat -o bad.safetensors
expect_error_line "tq:b=3,wat" "unknown option 'wat'" "known: b, block"
expect_exit 2 "missing template" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 --keys "blk.{layer}.key" \
  -o bad.safetensors
expect_error_line "kv.safetensors" "blk.{layer}.key"
expect_exit 2 "missing values" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 --values "layers.{layer}.val" \
  -o bad.safetensors
expect_error_line "kv.safetensors" "layers.{layer}.val"
expect_exit 2 "missing queries" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 --q tq:b=3 \
  --queries "q.{layer}" -o bad.safetensors
expect_error_line "kv.safetensors" "q.{layer}"
expect_exit 2 "bad layer list" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 --layers 0-x -o bad.safetensors
expect_error_line "layer list '0-x'"
expect_exit 2 "absent layer" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 --layers 7 -o bad.safetensors
expect_error_line "layer 7"
expect_exit 2 "bad layout" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 --layout "seq head dim" \
  -o bad.safetensors
expect_error_line "seq head dim"
expect_exit 2 "npy output of many tensors" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 -o bad.npy
expect_error_line "bad.npy" "one tensor"
expect_exit 2 "missing input" -- "$TQLAB" roundtrip nothing.safetensors --k tq:b=3 --v tq:b=3 -o bad.safetensors
expect_error_line "nothing.safetensors"
expect_exit 2 "missing --v" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 -o bad.safetensors
grep -q -- "--v" err.txt || fail "missing --v is not named: $(cat err.txt)"
for leftover in bad.safetensors bad.npy; do
  [ -e "$leftover" ] && fail "a failed roundtrip left $leftover"
done
[ -z "$(ls -A | grep -v -E '^(kv|out|again|seed1|same|layer1|real)\.(safetensors|npz)$|\.(txt|json)$')" ] ||
  fail "stray files: $(ls -A)"

expect_exit 0 "roundtrip --help" -- "$TQLAB" roundtrip --help
expect_contains out.txt "layers.{layer}.k" "layers.{layer}.v" "layers.{layer}.q" "head token dim" "--seed"
finish
