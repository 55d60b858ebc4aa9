# Every dtype a tensor file can hold, through the real binary: `inspect` lists each one (exact
# min/max for integers, bools as 0/1), `roundtrip` copies every tensor it does not quantize byte
# for byte (a safetensors file holding every safetensors dtype, an .npz of token ids, masks and
# positions), fp8 keys and values are quantized and swept, and an integer tensor named as keys
# is refused by roundtrip and sweep alike.
# Inputs: tests/data/io/all_dtypes.safetensors and ints.npz (tools/make_io_fixtures.py), and
# files built here with numpy (tools/kv_dump_format.py's writer).
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- *.safetensors *.npz *.json *.txt

require_numpy "it builds and compares the files"
data="$(cd "$(dirname "$0")/../data/io" && pwd)"
tools="$(cd "$(dirname "$0")/../../tools" && pwd)"

# ------------------------------------------------- inspect lists every dtype
expect_exit 0 "inspect all_dtypes" -- "$TQLAB" inspect "$data/all_dtypes.safetensors"
for row in 'bool +bool +\[2, 3\] +6 +0 +0 +1 ' 'u64 +u64 +\[3\] +3 +0 +0 +18446744073709551615 ' \
  'i64 +i64 +\[2, 2\] +4 +0 +-9223372036854775808 +9223372036854775807 ' 'f8_e4m3 +f8_e4m3 +\[6\] +6 +0 +-448 +448 ' \
  'f8_e5m2 +f8_e5m2 +\[2, 2\] +4 +0 +-5.734e\+04 +5.734e\+04 ' 'empty_ids +i64 +\[0\] +0 +0 ' 'bf16 +bf16 ' 'u8 +u8 +\[4\] +4 +0 +0 +255 '; do
  grep -qE "^$row" out.txt || fail "inspect table lacks a row like /$row/: $(cat out.txt)"
done
expect_exit 0 "inspect --json all_dtypes" -- "$TQLAB" inspect --json "$data/all_dtypes.safetensors"
"$python" - out.txt <<'PY' || fail "inspect --json of every dtype"
import json, sys
d = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in d["tensors"]}
assert sorted(x["dtype"] for x in d["tensors"]) == sorted(
    ["bool", "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f8_e4m3", "f8_e5m2", "f16", "bf16", "f32", "f64",
     "i64"]), [x["dtype"] for x in d["tensors"]]
# Exact integers where a double would round: JSON integers, not floats.
assert t["u64"]["max"] == 2**64 - 1 and isinstance(t["u64"]["max"], int), t["u64"]
assert t["i64"]["min"] == -2**63 and t["i64"]["max"] == 2**63 - 1, t["i64"]
PY
"$python" - out.txt <<'PY' || fail "inspect --json statistics"
import json, sys
t = {x["name"]: x for x in json.load(open(sys.argv[1]))["tensors"]}
# i64: -2^63, 2^63 - 1, 2^53 + 1, -(2^53 + 1): the exact sum is -1, the mean -0.25.
assert t["i64"]["mean"] == -0.25, t["i64"]
assert t["bool"]["mean"] == 0.5 and t["bool"]["min"] == 0 and t["bool"]["max"] == 1, t["bool"]
assert t["i8"]["min"] == -128 and t["i8"]["max"] == 127, t["i8"]
assert t["f8_e4m3"]["max"] == 448.0 and t["f8_e5m2"]["min"] == -57344.0
assert t["empty_ids"]["count"] == 0 and t["empty_ids"]["min"] == 0
PY

expect_exit 0 "inspect ints.npz" -- "$TQLAB" inspect "$data/ints.npz"
grep -qE '^input_ids +i64 +\[1, 4\] +4 +0 +1 +9007199254740993 ' out.txt || fail "ids not exact: $(cat out.txt)"
grep -qE '^big_endian_i2 +i16 +\[2\] +2 +0 +-2 +300 ' out.txt || fail "big-endian i2 misread: $(cat out.txt)"
grep -qE '^attention_mask +bool +\[1, 4\] +4 +0 +0 +1 ' out.txt || fail "mask misread: $(cat out.txt)"

# ------------------------------------------------- roundtrip copies every dtype byte for byte
"$python" - "$data" "$tools" <<'PY' || { echo "FAIL: cannot build the inputs"; exit 1; }
import json, struct, sys
import numpy as np
sys.path.insert(0, sys.argv[2])
import kv_dump_format as kdf

# Every tensor of the fixture, plus f16 keys and values (head token dim), and fp8 ones.
raw = open(sys.argv[1] + "/all_dtypes.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
header.pop("__metadata__")
numpy_of = {"BOOL": "|b1", "U8": "|u1", "I8": "|i1", "U16": "<u2", "I16": "<i2", "U32": "<u4", "I32": "<i4",
            "U64": "<u8", "I64": "<i8", "F16": "<f2", "F32": "<f4", "F64": "<f8"}
tensors = {}
rng = np.random.default_rng(1)
tensors["layers.0.k"] = (rng.standard_normal((2, 16, 32)) * 4).astype("<f2")
for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"]):
    begin, end = entry["data_offsets"]
    blob = raw[8 + n + begin:8 + n + end]
    code = entry["dtype"]
    if code in numpy_of:
        tensors[name] = np.frombuffer(blob, dtype=numpy_of[code]).reshape(entry["shape"])
    else:
        bits = np.frombuffer(blob, dtype="<u2" if code == "BF16" else "|u1").reshape(entry["shape"])
        tensors[name] = kdf.StoredAs(code, bits)
tensors["layers.0.v"] = rng.standard_normal((2, 16, 32)).astype("<f4")
kdf.write_safetensors("every.safetensors", tensors, {"layout": "head token dim"})

# fp8 keys and values: E4M3 codes of moderate values, E5M2 likewise.
e4m3 = rng.integers(0x20, 0x50, size=(2, 16, 32)).astype(np.uint8) | (rng.integers(0, 2, size=(2, 16, 32)) << 7).astype(np.uint8)
e5m2 = rng.integers(0x30, 0x44, size=(2, 16, 32)).astype(np.uint8)
kdf.write_safetensors("fp8.safetensors", {"layers.0.k": kdf.StoredAs("F8_E4M3", e4m3),
                                          "layers.0.v": kdf.StoredAs("F8_E5M2", e5m2),
                                          "input_ids": np.arange(16, dtype="<i8").reshape(1, 16)}, {})

# An .npz of token ids, a bool mask, positions and every other integer width, with K/V.
np.savez("ints.npz", input_ids=np.array([[1, 2**53 + 1, -(2**63), 2**63 - 1]], dtype="<i8"),
         attention_mask=np.array([[True, False, True, True]]), position_ids=np.arange(4, dtype="<i4")[None],
         u8=np.array([0, 255], dtype="|u1"), i8=np.array([-128, 127], dtype="|i1"),
         u16=np.array([65535], dtype="<u2"), big=np.array([-2, 300], dtype=">i2"),
         u32=np.array([4294967295], dtype="<u4"), u64=np.array([2**64 - 1], dtype="<u8"),
         **{"layers.0.k": tensors["layers.0.k"], "layers.0.v": tensors["layers.0.v"]})
PY

# compare IN OUT: every tensor but layers.0.k/v holds the same little-endian C-order bytes
# and the same dtype; K and V keep dtype and shape.
compare() {
  "$python" - "$1" "$2" <<'PY'
import json, struct, sys
import numpy as np
def tensors(path):
    if path.endswith(".npz"):
        with np.load(path) as archive:
            return {k: (archive[k].dtype.str.replace(">", "<"), list(archive[k].shape),
                        archive[k].astype(archive[k].dtype.newbyteorder("<")).tobytes()) for k in archive.files}
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in header.items()}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
assert a.keys() == b.keys(), (sorted(a), sorted(b))
for name in a:
    assert a[name][:2] == b[name][:2], (name, a[name][:2], b[name][:2])
    if name in ("layers.0.k", "layers.0.v"):
        assert a[name][2] != b[name][2], name + " was not quantized"
    else:
        assert a[name][2] == b[name][2], name + " changed"
print(f"{len(a)} tensors compared")
PY
}

expect_exit 0 "roundtrip every dtype" -- "$TQLAB" roundtrip every.safetensors --k tq:b=4 --v tq:b=3 -o every_out.safetensors
compare every.safetensors every_out.safetensors >cmp.txt || fail "every dtype: $(cat cmp.txt)"
expect_contains cmp.txt "18 tensors compared"
expect_exit 0 "roundtrip int/bool npz" -- "$TQLAB" roundtrip ints.npz --k tq:b=4 --v tq:b=3 -o ints_out.npz
compare ints.npz ints_out.npz >cmp.txt || fail "int/bool npz: $(cat cmp.txt)"
expect_contains cmp.txt "11 tensors compared"

expect_exit 0 "roundtrip fp8 keys and values" -- "$TQLAB" roundtrip fp8.safetensors --k tq:b=4 --v tq:b=4 -o fp8_out.safetensors
compare fp8.safetensors fp8_out.safetensors >cmp.txt || fail "fp8: $(cat cmp.txt)"
grep -qE '^layers\.0\.k +key +tq:b=4 +f8_e4m3 ' out.txt || fail "roundtrip table lacks the fp8 keys: $(cat out.txt)"

# sweep reads the same dumps through the same view: fp8 keys and values are swept.
cat > fp8_sweep.json <<'JSON'
{"name": "fp8", "data": {"path": "fp8.safetensors", "queries": null}, "runs": [{"k": "tq:b=4", "v": "tq:b=4"}],
 "out": "fp8_result.json"}
JSON
expect_exit 0 "sweep fp8 keys and values" -- "$TQLAB" sweep --config fp8_sweep.json --quiet
"$python" -c 'import json; d = json.load(open("fp8_result.json")); assert d["data"]["dtypes"]["keys"] == "f8_e4m3" and d["data"]["dtypes"]["values"] == "f8_e5m2", d["data"]; assert 0 < d["runs"][0]["metrics"]["k_rel_mse"]["mean"] < 0.05' ||
  fail "sweep of fp8 keys and values"

# ------------------------------------------------- only floats are keys
expect_exit 2 "integer tensor as keys" -- "$TQLAB" roundtrip every.safetensors --keys 'i{layer}' --layers 64 \
  --k tq:b=4 --v tq:b=4 -o never.safetensors
expect_error_line "'every.safetensors'" "tensor 'i64'" "is i64" "must be floats" "f8_e4m3"
[ -e never.safetensors ] && fail "a refused roundtrip wrote its output"
cat > ids_sweep.json <<'JSON'
{"name": "ids", "data": {"path": "every.safetensors", "keys": "i{layer}", "layers": "64"},
 "runs": [{"k": "tq:b=4", "v": "tq:b=4"}], "out": "never.json"}
JSON
expect_exit 2 "sweep of an integer tensor as keys" -- "$TQLAB" sweep --config ids_sweep.json --quiet
expect_error_line "'every.safetensors'" "tensor 'i64' (template 'i{layer}') is i64" "must be floats"
[ -e never.json ] && fail "a refused sweep wrote its results"
finish
