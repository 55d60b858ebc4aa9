# tqlab roundtrip --engine llama.cpp: keys and values through llama.cpp's cache, on the bundled
# model's own dump (head dim 64), checked against a numpy restatement of its rules
# (engine/llamacpp_cache_quantizer.h): keys moved to GGML's channel order, both rotated by the
# 64-wide Walsh-Hadamard blocks in float32 (scaled by 1/8 first, then butterflies of width 1, 2,
# 4, ...), q4_0 by ggml's reference quantizer (tools/ggml_quantize.py), decoded, rotated again and
# put back, the same floats to the last bit; with rot=off the values are plain q4_0's bytes and the
# keys q4_0 in GGML's order; the bits are q4_0's 4.5; the engine is recorded in the metadata; what
# the engine cannot run is one line and exit 2.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- *.safetensors *.txt *.json
repo="$(cd "$(dirname "$0")/../.." && pwd)"
model="$repo/data/tinyllama_hf"
require_numpy "the reference restates the engine's rules in numpy"

expect_exit 0 "dump" -- "$TQLAB" dump --model "$model" --tokens "$model/windows.npy" --ctx 128 --chunks 2 \
  --dtype f32 -o kv.safetensors --quiet
expect_exit 0 "roundtrip --engine llama.cpp" -- "$TQLAB" roundtrip kv.safetensors --engine llama.cpp --k q4_0 \
  --v q4_0 -o rotated.safetensors
expect_contains out.txt "layers.0.k  key    q4_0  f32" " 4.5 "
expect_exit 0 "roundtrip --engine llama.cpp:rot=off" -- "$TQLAB" roundtrip kv.safetensors \
  --engine llama.cpp:rot=off --k q4_0 --v q4_0 -o plain_order.safetensors --quiet
expect_exit 0 "roundtrip, tqlab's q4_0" -- "$TQLAB" roundtrip kv.safetensors --k q4_0 --v q4_0 -o plain.safetensors \
  --quiet

checks=$((checks + 1))
"$python" - "$repo/tools" <<'PY' || fail "the engine's cache is not llama.cpp's rules restated"
import json, struct, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from ggml_quantize import quantize_q4_0

def read(path):
    data = open(path, "rb").read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    meta = header.pop("__metadata__", {})
    base = 8 + size
    out = {}
    for name, e in header.items():
        if e["dtype"] != "F32":
            continue  # input_ids and the like: copied, not the cache's
        a, b = e["data_offsets"]
        out[name] = np.frombuffer(data[base + a:base + b], np.float32).reshape(e["shape"])
    return out, meta

def hadamard(rows):  # ggml_compute_forward_fwht on blocks of 64, in float32
    x = (rows.reshape(-1, 64) * np.float32(0.125)).astype(np.float32)
    length = 1
    while length < 64:
        y = x.reshape(-1, 64 // (2 * length), 2, length)
        u, v = y[:, :, 0, :].copy(), y[:, :, 1, :].copy()
        y[:, :, 0, :], y[:, :, 1, :] = u + v, u - v
        x = y.reshape(-1, 64)
        length *= 2
    return x.reshape(rows.shape)

def to_ggml(rows):
    half = rows.shape[-1] // 2
    out = np.empty_like(rows)
    out[..., 0::2], out[..., 1::2] = rows[..., :half], rows[..., half:]
    return out

def from_ggml(rows):
    return np.concatenate([rows[..., 0::2], rows[..., 1::2]], axis=-1)

def q4_0(rows):
    return quantize_q4_0(rows.reshape(-1, rows.shape[-1]))[1].reshape(rows.shape)

source, _ = read("kv.safetensors")
rotated, meta = read("rotated.safetensors")
plain_order, meta_off = read("plain_order.safetensors")
plain, _ = read("plain.safetensors")
assert meta["tqlab.roundtrip.engine"] == "llama.cpp" and meta_off["tqlab.roundtrip.engine"] == "llama.cpp:rot=off"
names = [n for n in source if n.endswith(".k") or n.endswith(".v")]
assert names, list(source)
for name in names:
    x = source[name]
    assert x.shape[-1] == 64, x.shape
    key = name.endswith(".k")
    order = (to_ggml, from_ggml) if key else (lambda r: r, lambda r: r)
    expected = order[1](hadamard(q4_0(hadamard(order[0](x)))))
    assert np.array_equal(rotated[name], expected), (name, np.abs(rotated[name] - expected).max())
    expected_off = order[1](q4_0(order[0](x)))
    assert np.array_equal(plain_order[name], expected_off), name
    if not key:
        assert np.array_equal(plain_order[name], plain[name]), name
    else:
        assert not np.array_equal(plain_order[name], plain[name]), name  # other channels share blocks
print(f"{len(names)} tensors: llama.cpp's cache restated to the last bit, rotated and not")
PY

# ---------------------------------------------------------------- what the engine cannot run
expect_exit 2 "a spec the engine has no cache type for" -- "$TQLAB" roundtrip kv.safetensors --engine llama.cpp \
  --k tq:b=3 --v q4_0 -o refused.safetensors
expect_contains err.txt "--k/--v" "tq:b=3" "llama.cpp"
expect_exit 2 "queries with an engine" -- "$TQLAB" roundtrip kv.safetensors --engine llama.cpp --k q8_0 --v q8_0 \
  --q q8_0 -o refused.safetensors
expect_contains err.txt "--q" "--engine llama.cpp"
expect_exit 2 "no such engine" -- "$TQLAB" roundtrip kv.safetensors --engine vllm --k q8_0 --v q8_0 \
  -o refused.safetensors
expect_contains err.txt "--engine" "vllm"
[ ! -e refused.safetensors ] || fail "a refused roundtrip wrote its output"
finish
