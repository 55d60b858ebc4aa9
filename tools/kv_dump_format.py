"""The file side of tools/dump_kv.py: per-layer keys, values and queries as numpy arrays in, one
safetensors file in tqlab's names and layout out. numpy only (Debian's python3-numpy); no torch,
no `safetensors` package, so that this half is tested on machines without either
(tests/cli/kv_dump_format.sh writes dumps shaped like real models and reads them back with
`tqlab inspect --json` and `tqlab sweep`).

What a dump holds
-----------------
- `layers.{layer}.k`, `layers.{layer}.v`: post-RoPE keys and values, axes `batch head token dim`
  (kv heads); `layers.{layer}.q`: post-RoPE queries, `batch head token dim` (query heads).
  K and V agree in batch, heads and tokens; their head dims may differ (MLA: K 192, V 128) and
  may change from layer to layer; Q agrees with K in batch, tokens and head dim, and its head count
  is a multiple of K's (grouped-query attention: q head h reads kv head h * kv_heads // q_heads).
- any extra tensors (token ids, attention mask, position ids), stored as they are.
- `__metadata__` (strings only, as safetensors requires): `layout` ("batch head token dim") and
  the name templates `keys`, `values`, `queries`, which are what `tqlab sweep` / `tqlab roundtrip`
  / `tqlab inspect` read by default, plus whatever the caller adds (model id, dtype, tokens,
  attention scale, rope theta).

Element types
-------------
float16 -> F16, float32 -> F32, float64 -> F64, and bfloat16 -> BF16. numpy has no bfloat16, so a
bfloat16 tensor travels as `Bf16Bits(bits)`: its raw uint16 bit patterns (what torch gives with
`t.view(torch.int16).numpy().view(numpy.uint16)`), written as BF16, the type safetensors has for
it, so that every reader (tqlab, torch, the safetensors package) sees bfloat16 values and not
integers. fp8 tensors travel the same way (`StoredAs("F8_E4M3", uint8 bits)`). `float_to_bf16_bits`
rounds float32 to bfloat16 (nearest, ties to even) for callers that hold floats. Integer and bool
arrays (extra tensors) map to I8..I64, U8..U64 and BOOL.

Reading back
------------
`read_safetensors` is the one reader the Python tools share (compare_synth.py, plot_results.py,
tests/cli/sweep_reference.py): every float tensor as float64, and the metadata.
(tests/cli/kv_dump_format.py keeps a parser of its own on purpose: it checks this writer.)

The writer
----------
A safetensors file is: an unsigned 64-bit little-endian header length N, N bytes of JSON
({"__metadata__": {...}, "name": {"dtype", "shape", "data_offsets": [begin, end]}, ...}), then
the tensors' bytes, C order, little-endian, back to back in header order. The header is padded
with spaces to a multiple of 8 bytes so every tensor starts 8-byte aligned. The file is written
to NAME.tmp and renamed, so it appears whole or not at all.
"""

import json
import os
import struct
from pathlib import Path

import numpy as np

LAYOUT = "batch head token dim"
TEMPLATES = {"keys": "layers.{layer}.k", "values": "layers.{layer}.v", "queries": "layers.{layer}.q"}
_AXES = ("batch", "head", "token", "dim")


class StoredAs:
    """A tensor of a safetensors dtype numpy has no type for ("BF16", "F8_E4M3", "F8_E5M2"),
    held as its raw bit patterns in an unsigned integer array of the same item size."""

    _BITS = {"BF16": np.uint16, "F8_E4M3": np.uint8, "F8_E5M2": np.uint8}

    def __init__(self, code, bits):
        bits = np.asarray(bits)
        if code not in self._BITS:
            raise ValueError(f"StoredAs is for {', '.join(self._BITS)}, not {code}")
        if bits.dtype != self._BITS[code]:
            raise ValueError(f"{code} bit patterns are held as {np.dtype(self._BITS[code])}, not {bits.dtype}")
        self.code = code
        self.bits = bits

    @property
    def shape(self):
        return self.bits.shape

    def transpose(self, axes):
        return StoredAs(self.code, self.bits.transpose(axes))


def Bf16Bits(bits):  # noqa: N802 (reads like the type it makes)
    """A bfloat16 tensor from its uint16 bit patterns (numpy has no bfloat16)."""
    return StoredAs("BF16", bits)


def bf16_bits_to_float32(bits):
    """float32 values of bfloat16 bit patterns (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def float_to_bf16_bits(values):
    """bfloat16 bit patterns of float values, rounded to nearest, ties to even; NaN stays NaN."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(values, dtype=np.float32))
    rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)  # keep NaN quiet, as torch does
    return Bf16Bits(rounded)


# numpy dtype -> safetensors dtype code.
_CODES = {
    np.dtype(np.bool_): "BOOL",
    np.dtype(np.uint8): "U8", np.dtype(np.int8): "I8",
    np.dtype(np.uint16): "U16", np.dtype(np.int16): "I16",
    np.dtype(np.uint32): "U32", np.dtype(np.int32): "I32",
    np.dtype(np.uint64): "U64", np.dtype(np.int64): "I64",
    np.dtype(np.float16): "F16", np.dtype(np.float32): "F32", np.dtype(np.float64): "F64",
}
FLOAT_CODES = ("F8_E4M3", "F8_E5M2", "BF16", "F16", "F32", "F64")


def dtype_code(array):
    """The safetensors dtype code of a numpy array or StoredAs."""
    if isinstance(array, StoredAs):
        return array.code
    dtype = np.asarray(array).dtype
    code = _CODES.get(dtype.newbyteorder("="))
    if code is None:
        raise ValueError(f"dtype {dtype} has no safetensors equivalent here (bool, int8..int64, uint8..uint64, "
                         "float16/32/64, or StoredAs for bfloat16 and fp8)")
    return code


def _raw_bytes(array):
    """C-order little-endian bytes of a numpy array or StoredAs."""
    data = array.bits if isinstance(array, StoredAs) else np.asarray(array)
    return np.ascontiguousarray(data.astype(data.dtype.newbyteorder("<"), copy=False)).tobytes()


def to_tqlab_layout(array, source_layout=LAYOUT):
    """Transposes a rank-4 array whose axes `source_layout` names (the words batch|seq, head, token,
    dim in any order, e.g. "batch token head dim" as q_proj outputs are viewed) to batch head token dim."""
    words = ["batch" if word == "seq" else word for word in source_layout.split()]
    if sorted(words) != sorted(_AXES):
        raise ValueError(f"layout {source_layout!r} must name each of batch, head, token, dim once")
    if len(array.shape) != 4:
        raise ValueError(f"expected a rank-4 array ({source_layout}), got shape {tuple(array.shape)}")
    return array.transpose([words.index(axis) for axis in _AXES])


def check_layer(layer, keys, values, queries=None):
    """Validates one layer's arrays, already in batch head token dim; returns its sizes as a dict.
    Raises ValueError naming the layer and the rule it breaks."""
    for role, array in (("keys", keys), ("values", values), ("queries", queries)):
        if array is None:
            continue
        if len(array.shape) != 4:
            raise ValueError(f"layer {layer}: {role} have shape {tuple(array.shape)}, expected {LAYOUT}")
        if dtype_code(array) not in FLOAT_CODES:
            raise ValueError(f"layer {layer}: {role} are {dtype_code(array)}, expected a float type "
                             f"({', '.join(FLOAT_CODES)})")
        if 0 in array.shape:
            raise ValueError(f"layer {layer}: {role} are empty (shape {tuple(array.shape)})")
    batch, kv_heads, tokens, key_dim = keys.shape
    if values.shape[:3] != keys.shape[:3]:
        raise ValueError(f"layer {layer}: keys {tuple(keys.shape)} and values {tuple(values.shape)} disagree in "
                         "batch, heads or tokens")
    sizes = {"batch": batch, "kv_heads": kv_heads, "tokens": tokens, "key_dim": key_dim,
             "value_dim": values.shape[3], "q_heads": 0}
    if queries is not None:
        q_batch, q_heads, q_tokens, q_dim = queries.shape
        if (q_batch, q_tokens, q_dim) != (batch, tokens, key_dim):
            raise ValueError(f"layer {layer}: queries {tuple(queries.shape)} and keys {tuple(keys.shape)} disagree in "
                             "batch, tokens or head dim")
        if q_heads % kv_heads != 0:
            raise ValueError(f"layer {layer}: {q_heads} query heads are not a multiple of {kv_heads} key/value heads "
                             "(grouped-query attention needs q_heads = g * kv_heads)")
        sizes["q_heads"] = q_heads
    return sizes


def kv_dump_tensors(layers, source_layout=LAYOUT):
    """tqlab's tensors for `layers`, a list (index = layer number) of (keys, values, queries-or-None)
    with axes `source_layout`: an ordered dict name -> array in batch head token dim, and the list of
    per-layer sizes. Queries must be present for every layer or for none."""
    if not layers:
        raise ValueError("no layers to write")
    with_queries = [queries is not None for _, _, queries in layers]
    if any(with_queries) and not all(with_queries):
        missing = [i for i, present in enumerate(with_queries) if not present]
        raise ValueError(f"queries are missing for layers {missing} but present for others")
    tensors, sizes = {}, []
    for layer, (keys, values, queries) in enumerate(layers):
        keys, values = to_tqlab_layout(keys, source_layout), to_tqlab_layout(values, source_layout)
        queries = None if queries is None else to_tqlab_layout(queries, source_layout)
        sizes.append(check_layer(layer, keys, values, queries))
        if queries is not None:
            tensors[TEMPLATES["queries"].format(layer=layer)] = queries
        tensors[TEMPLATES["keys"].format(layer=layer)] = keys
        tensors[TEMPLATES["values"].format(layer=layer)] = values
    return tensors, sizes


def dump_metadata(sizes, extra=None):
    """The __metadata__ of a dump: layout, name templates, the first layer's sizes, and `extra`
    (values turned into strings; safetensors metadata maps strings to strings)."""
    first = sizes[0]
    metadata = {"layout": LAYOUT, "keys": TEMPLATES["keys"], "values": TEMPLATES["values"],
                "layers": str(len(sizes)), "batch": str(first["batch"]), "tokens": str(first["tokens"]),
                "kv_heads": str(first["kv_heads"]), "key_dim": str(first["key_dim"]),
                "value_dim": str(first["value_dim"])}
    if first["q_heads"]:
        metadata["queries"] = TEMPLATES["queries"]
        metadata["q_heads"] = str(first["q_heads"])
    for key, value in (extra or {}).items():
        metadata[str(key)] = value if isinstance(value, str) else json.dumps(value)
    return metadata


# safetensors float dtype -> how its bytes read as numpy values (None: bfloat16, read from its bits).
_FLOAT_READS = {"F16": "<f2", "BF16": None, "F32": "<f4", "F64": "<f8"}


def read_safetensors(path):
    """(name -> float64 array, metadata dict) for the F16, BF16, F32 and F64 tensors of a
    safetensors file, in header order; tensors of other dtypes (token ids, masks) are left out."""
    raw = Path(path).read_bytes()
    (header_length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + header_length])
    metadata = header.pop("__metadata__", {})
    data = raw[8 + header_length:]
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] not in _FLOAT_READS:
            continue
        begin, end = entry["data_offsets"]
        read = _FLOAT_READS[entry["dtype"]]
        if read is None:
            array = bf16_bits_to_float32(np.frombuffer(data[begin:end], dtype="<u2"))
        else:
            array = np.frombuffer(data[begin:end], dtype=read)
        tensors[name] = array.astype(np.float64).reshape(entry["shape"])
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """Writes `tensors` (name -> numpy array or StoredAs, in order) and `metadata` (str -> str) as
    a safetensors file, atomically."""
    header = {}
    if metadata:
        for key, value in metadata.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ValueError(f"metadata maps strings to strings; {key!r}: {value!r} is not")
        header["__metadata__"] = dict(metadata)
    offset = 0
    blobs = []
    for name, array in tensors.items():
        if name == "__metadata__":
            raise ValueError("a tensor cannot be named __metadata__ (safetensors reserves it)")
        blob = _raw_bytes(array)
        header[name] = {"dtype": dtype_code(array), "shape": [int(n) for n in array.shape],
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for blob in blobs:
            out.write(blob)
    os.replace(temporary, path)


def write_kv_dump(path, layers, *, source_layout=LAYOUT, extra_tensors=None, metadata=None):
    """Validates `layers` (see kv_dump_tensors), puts them in tqlab's names and layout, and writes
    them with `extra_tensors` (name -> array, e.g. input_ids) and the dump's metadata to `path`.
    Returns the per-layer sizes."""
    tensors, sizes = kv_dump_tensors(layers, source_layout)
    for name, array in (extra_tensors or {}).items():
        if name in tensors:
            raise ValueError(f"extra tensor {name!r} has the name of a K/V/Q tensor")
        tensors[name] = array
    write_safetensors(path, tensors, dump_metadata(sizes, metadata))
    return sizes
