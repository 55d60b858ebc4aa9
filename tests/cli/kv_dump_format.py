"""Builds and checks the dumps of tests/cli/kv_dump_format.sh (tools/kv_dump_format.py).

    kv_dump_format.py TOOLS_DIR build          writes gqa128/gqa64/mla .safetensors, expected.json
    kv_dump_format.py TOOLS_DIR check-inspect NAME INSPECT_JSON
    kv_dump_format.py TOOLS_DIR check-sweep NAME RESULTS_JSON
    kv_dump_format.py TOOLS_DIR refusals       the writer's validation errors

Arrays are shaped like real models': Llama-3-8B-style GQA (32 query / 8 kv heads, head dim 128,
bfloat16 given as raw uint16 bits), a small GQA model (8 / 2 heads, head dim 64, float16, two
sequences), and DeepSeek-style MLA (K 192 / V 128, float32). The files are read back here with
a parser of our own (struct + json: the bytes must be the source arrays, transposed to
batch head token dim) and by tqlab (`inspect --json`, `sweep`) in the shell script.
"""

import json
import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, sys.argv[1])
import kv_dump_format as kdf  # noqa: E402

TOKENS = 32


def source_arrays(seed, batch, q_heads, kv_heads, key_dim, value_dim, layers, layout):
    """Per-layer (keys, values, queries) float32 arrays in `layout` ("batch token head dim" or the default)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(layers):
        shapes = {"k": (batch, kv_heads, TOKENS, key_dim), "v": (batch, kv_heads, TOKENS, value_dim),
                  "q": (batch, q_heads, TOKENS, key_dim)}
        arrays = {}
        for role, shape in shapes.items():
            # Keys with a few large channels, as real keys have; values and queries plain.
            scale = np.ones(shape[-1]) * (3.0 if role == "k" else 1.0)
            if role == "k":
                scale[:4] = 20.0
            array = (rng.standard_normal(shape) * scale).astype(np.float32)
            if layout == "batch token head dim":
                array = array.transpose(0, 2, 1, 3)  # what q_proj(h).view(b, t, h, d) gives
            arrays[role] = array
        out.append((arrays["k"], arrays["v"], arrays["q"]))
    return out


def cast(array, dtype):
    if dtype == "bf16":
        return kdf.float_to_bf16_bits(array)
    return array.astype({"f16": np.float16, "f32": np.float32}[dtype])


def as_float(array):
    if isinstance(array, kdf.StoredAs):
        return kdf.bf16_bits_to_float32(array.bits).astype(np.float64)
    return np.asarray(array, dtype=np.float64)


DUMPS = {
    # name: (seed, batch, q_heads, kv_heads, key_dim, value_dim, layers, source layout, dtype)
    "gqa128": (1, 1, 32, 8, 128, 128, 2, "batch token head dim", "bf16"),
    "gqa64": (2, 2, 8, 2, 64, 64, 2, kdf.LAYOUT, "f16"),
    "mla": (3, 1, 4, 4, 192, 128, 2, kdf.LAYOUT, "f32"),
}


def build():
    expected = {}
    for name, (seed, batch, q_heads, kv_heads, key_dim, value_dim, layers, layout, dtype) in DUMPS.items():
        raw = source_arrays(seed, batch, q_heads, kv_heads, key_dim, value_dim, layers, layout)
        stored = [tuple(cast(a, dtype) for a in layer) for layer in raw]
        extra = {"input_ids": np.arange(batch * TOKENS, dtype=np.int64).reshape(batch, TOKENS) * 1000 + 2**40,
                 "attention_mask": np.ones((batch, TOKENS), dtype=np.int64)}
        metadata = {"model": f"test/{name}", "dtype": dtype, "attention_scale": repr(key_dim ** -0.5),
                    "rope_theta": "500000.0"}
        sizes = kdf.write_kv_dump(f"{name}.safetensors", stored, source_layout=layout, extra_tensors=extra,
                                  metadata=metadata)
        assert len(sizes) == layers and sizes[0]["q_heads"] == q_heads and sizes[0]["value_dim"] == value_dim
        tensors = {}
        for layer, (k, v, q) in enumerate(stored):
            for role, array in (("k", k), ("v", v), ("q", q)):
                values = as_float(array)
                if layout == "batch token head dim":
                    values = values.transpose(0, 2, 1, 3)
                tensors[f"layers.{layer}.{role}"] = {
                    "dtype": kdf.dtype_code(array), "shape": list(values.shape), "min": values.min(),
                    "max": values.max(), "mean": values.mean(), "rms": float(np.sqrt((values ** 2).mean()))}
                check_bytes(f"{name}.safetensors", f"layers.{layer}.{role}", values, kdf.dtype_code(array))
        expected[name] = {"tensors": tensors, "layers": layers, "batch": batch, "q_heads": q_heads,
                          "kv_heads": kv_heads, "key_dim": key_dim, "value_dim": value_dim, "dtype": dtype,
                          "scale": key_dim ** -0.5}
    Path("expected.json").write_text(json.dumps(expected, default=float))


def read_safetensors(path):
    """name -> (dtype code, shape, bytes), and the metadata: a parser independent of the writer."""
    raw = Path(path).read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    assert (8 + n) % 8 == 0, "data buffer not 8-byte aligned"
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__")
    end = 0
    for entry in sorted(header.values(), key=lambda e: e["data_offsets"]):
        assert entry["data_offsets"][0] == end, "gap or overlap in the data buffer"
        end = entry["data_offsets"][1]
    assert 8 + n + end == len(raw), "trailing bytes"
    return {k: (v["dtype"], v["shape"], raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in header.items()}, metadata


def check_bytes(path, name, values, code):
    """The stored tensor is `values` (batch head token dim) in `code`, byte for byte."""
    tensors, _ = read_safetensors(path)
    got_code, shape, blob = tensors[name]
    assert got_code == code and shape == list(values.shape), (name, got_code, shape, values.shape)
    if code == "BF16":
        want = kdf.float_to_bf16_bits(values.astype(np.float32)).bits.astype("<u2").tobytes()
    else:
        want = values.astype({"F16": "<f2", "F32": "<f4"}[code]).tobytes()
    assert blob == want, f"{name}: bytes are not the source in batch head token dim"


def check_inspect(name, inspect_path):
    want = json.loads(Path("expected.json").read_text())[name]
    d = json.loads(Path(inspect_path).read_text())
    assert d["schema"] == "tqlab.inspect/1" and d["format"] == "safetensors"
    meta = d["metadata"]
    assert meta["layout"] == "batch head token dim" and meta["keys"] == "layers.{layer}.k", meta
    assert meta["queries"] == "layers.{layer}.q" and meta["values"] == "layers.{layer}.v", meta
    assert meta["model"] == f"test/{name}" and meta["dtype"] == want["dtype"], meta
    assert int(meta["layers"]) == want["layers"] and int(meta["q_heads"]) == want["q_heads"], meta
    assert float(meta["attention_scale"]) == want["scale"], meta
    tensors = {t["name"]: t for t in d["tensors"]}
    assert set(tensors) == set(want["tensors"]) | {"input_ids", "attention_mask"}, sorted(tensors)
    names = {"BF16": "bf16", "F16": "f16", "F32": "f32"}
    for tensor_name, w in want["tensors"].items():
        t = tensors[tensor_name]
        assert t["dtype"] == names[w["dtype"]] and t["shape"] == w["shape"], (tensor_name, t["dtype"], t["shape"])
        assert t["nonfinite"] == 0
        for stat in ("min", "max", "mean", "rms"):
            assert abs(t[stat] - w[stat]) <= 1e-5 * max(1.0, abs(w[stat])), (tensor_name, stat, t[stat], w[stat])
    ids = tensors["input_ids"]
    assert ids["dtype"] == "i64" and ids["min"] == 2**40 and ids["max"] == 2**40 + 1000 * (want["batch"] * 32 - 1)
    assert [layer["layer"] for layer in d["kv_layers"]] == list(range(want["layers"])), d["kv_layers"]


def check_sweep(name, results_path):
    want = json.loads(Path("expected.json").read_text())[name]
    d = json.loads(Path(results_path).read_text())
    data = d["data"]
    assert data["layout"] == "batch head token dim", data["layout"]
    dtype = {"bf16": "bf16", "f16": "f16", "f32": "f32"}[want["dtype"]]
    assert data["dtypes"] == {"keys": dtype, "values": dtype, "queries": dtype}, data["dtypes"]
    assert len(data["layers"]) == want["layers"]
    for layer in data["layers"]:
        assert (layer["seqs"], layer["q_heads"], layer["kv_heads"], layer["tokens"], layer["key_dim"],
                layer["value_dim"]) == (want["batch"], want["q_heads"], want["kv_heads"], 32, want["key_dim"],
                                        want["value_dim"]), layer
    for run in d["runs"]:
        for metric in ("k_rel_mse", "v_rel_mse", "attn_kl", "attn_top1"):
            value = run["metrics"][metric]["mean"]
            assert value is not None and np.isfinite(value), (run["id"], metric)
        assert 0 < run["metrics"]["k_rel_mse"]["mean"] < 0.05, run["metrics"]["k_rel_mse"]
        assert run["metrics"]["attn_top1"]["mean"] > 0.5, run["metrics"]["attn_top1"]


def refusals():
    """Each rule of the writer, broken once, is a ValueError naming the layer and the rule."""
    rng = np.random.default_rng(9)
    k = rng.standard_normal((1, 8, 4, 64)).astype(np.float32)
    cases = [
        ([(k, k, rng.standard_normal((1, 12, 4, 64)).astype(np.float32))], "not a multiple of 8 key/value heads"),
        ([(k, k[:, :, :3], None)], "disagree in batch, heads or tokens"),
        ([(k, k, rng.standard_normal((1, 8, 4, 32)).astype(np.float32))], "disagree in batch, tokens or head dim"),
        ([(k.astype(np.int32), k, None)], "keys are I32, expected a float type"),
        ([(k[0], k[0], None)], "expected a rank-4 array"),
        ([(k, k, k), (k, k, None)], "queries are missing for layers [1]"),
        ([], "no layers"),
    ]
    for layers, message in cases:
        try:
            kdf.write_kv_dump("never.safetensors", layers)
        except ValueError as error:
            assert message in str(error), (message, str(error))
        else:
            raise AssertionError(f"no error for: {message}")
    assert not Path("never.safetensors").exists()
    try:
        kdf.to_tqlab_layout(k, "batch head head dim")
    except ValueError as error:
        assert "each of batch, head, token, dim once" in str(error)
    else:
        raise AssertionError("a layout naming head twice was accepted")
    # bfloat16 rounding: ties to even, NaN kept quiet.
    bits = kdf.float_to_bf16_bits(np.array([1.0, 1.00390625, 1.01171875, np.nan], dtype=np.float32)).bits
    assert list(bits[:3]) == [0x3F80, 0x3F80, 0x3F82] and (bits[3] & 0x7FC0) == 0x7FC0, [hex(b) for b in bits]
    print("refusals ok")


if __name__ == "__main__":
    command = sys.argv[2]
    if command == "build":
        build()
    elif command == "check-inspect":
        check_inspect(sys.argv[3], sys.argv[4])
    elif command == "check-sweep":
        check_sweep(sys.argv[3], sys.argv[4])
    elif command == "refusals":
        refusals()
    else:
        sys.exit(f"unknown command {command}")
