#!/usr/bin/python3
"""Writes valid KV dumps whose shapes, values or names are extreme (docs/RELIABILITY.md's hostile list).

    /usr/bin/python3 tools/make_hostile_inputs.py DIR

tests/cli/hostile_inputs.sh runs inspect, roundtrip and sweep on each: every one must give
correct results or a clear one-line exit-2 error, never a crash, a hang or NaN/Inf in results.
Debian's python3 with python3-numpy (the bf16 helpers of tools/kv_dump_format.py).
Every file is "head token dim" with tensors layers.{L}.k/.v/.q unless said otherwise, and
small (the 10 000-layer file is about 2 MB, mostly its header).

    dim4096       head dim 4096 (1 kv head, 2 q heads, 4 tokens)
    dim1          head dim 1
    one_token     1 token
    one_layer     1 layer (of 2 kv heads)
    gqa_3_4       3 kv heads, 4 q heads (4 is not a multiple of 3)
    zeros         K, V and Q all zero
    denormals     f16 subnormals in K/V/Q (2^-24 .. 2^-15) and an f32 file of f32 subnormals
    f16_extremes  K/V at +-65504 (f16's largest), Q ordinary
    f32_huge      f32 K/V near 1e20 and 3e38: their squares overflow float
    bf16_nan      bf16 K/V/Q, K holding NaNs with payloads; an extra bf16 tensor "payloads"
                  of NaNs with distinct payloads, which a roundtrip must copy bit for bit
    layers10000   10 000 layers of [1, 2, 2] f16 tensors
    odd_names     extra tensors named with { } .. / and spaces; K/V/Q named
                  "model/blk {layer}/../k..{x}" (and v, q) to exercise templates
"""

import json
import math
import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kv_dump_format  # noqa: E402  (the tools' one set of bf16 helpers)


def safetensors(path, tensors, metadata=None):
    """tensors: list of (name, dtype, shape, raw bytes)."""
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text)
        for _, _, _, raw in tensors:
            out.write(raw)


def f16(values):
    return struct.pack(f"<{len(values)}e", *values)


def f32(values):
    return struct.pack(f"<{len(values)}f", *values)


def bf16_bits(bits):
    """Raw bfloat16 bit patterns, as stored."""
    return np.asarray(bits, dtype="<u2").tobytes()


def bf16(values):
    """bfloat16 values, rounded by the tools' one bf16 helper (kv_dump_format.py)."""
    return bf16_bits(kv_dump_format.float_to_bf16_bits(values).bits)


def wave(count, seed, scale=1.0):
    """Deterministic values in [-scale, scale], varied enough for every quantizer."""
    return [scale * math.sin(0.37 * i + seed) * math.cos(0.11 * i * seed + 1.0) for i in range(count)]


def kvq(layers, kv_heads, q_heads, tokens, dim, dtype="F16", make=None, names=("layers.{}.k", "layers.{}.v", "layers.{}.q")):
    """K/V/Q tensors of every layer; make(count, seed) gives the values (encoded by dtype)."""
    encode = {"F16": f16, "F32": f32, "BF16": bf16}[dtype]
    make = make or (lambda count, seed: wave(count, seed))
    out = []
    for layer in range(layers):
        for role, heads, seed in ((0, kv_heads, 1), (1, kv_heads, 2), (2, q_heads, 3)):
            shape = [heads, tokens, dim]
            count = heads * tokens * dim
            out.append((names[role].format(layer), dtype, shape, encode(make(count, seed + 3 * layer))))
    return out


def main(folder):
    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    layout = {"layout": "head token dim"}
    safetensors(d / "dim4096.safetensors", kvq(1, 1, 2, 4, 4096), layout)
    safetensors(d / "dim1.safetensors", kvq(1, 2, 2, 8, 1), layout)
    safetensors(d / "one_token.safetensors", kvq(2, 2, 4, 1, 32), layout)
    safetensors(d / "one_layer.safetensors", kvq(1, 2, 4, 16, 32), layout)
    safetensors(d / "gqa_3_4.safetensors", kvq(1, 3, 4, 16, 32), layout)
    safetensors(d / "zeros.safetensors", kvq(2, 2, 4, 16, 32, make=lambda n, s: [0.0] * n), layout)
    tiny = 2.0 ** -24  # the smallest f16 subnormal; 2^-15 is below the smallest normal (2^-14)
    safetensors(d / "denormals.safetensors",
                kvq(1, 2, 4, 16, 32, make=lambda n, s: [tiny * round(512 * v) for v in wave(n, s)]), layout)
    safetensors(d / "denormals_f32.safetensors",
                kvq(1, 2, 4, 16, 32, "F32", make=lambda n, s: [1e-40 * v for v in wave(n, s)]), layout)
    safetensors(d / "f16_extremes.safetensors",
                kvq(1, 2, 4, 16, 32, make=lambda n, s: [65504.0 if v >= 0 else -65504.0 for v in wave(n, s)]
                    if s != 3 else wave(n, s)), layout)
    safetensors(d / "f32_huge.safetensors",
                kvq(1, 2, 4, 16, 32, "F32", make=lambda n, s: [(3e38 if i % 7 == 0 else 1e20) * v
                                                                for i, v in enumerate(wave(n, s))]
                    if s != 3 else wave(n, s)), layout)
    # bf16 NaN payloads: quiet and signalling, both signs, distinct payload bits.
    payloads = [0x7FC0, 0x7FC1, 0xFFC0, 0xFFFF, 0x7F81, 0xFF81, 0x7FAA, 0x7F80, 0xFF80, 0x3F80]
    bf = kvq(1, 2, 4, 16, 32, "BF16")
    k_name, _, k_shape, k_raw = bf[0]
    bits = list(struct.unpack(f"<{len(k_raw) // 2}H", k_raw))
    bits[5], bits[77] = 0x7FC1, 0xFFA0
    bf[0] = (k_name, "BF16", k_shape, bf16_bits(bits))
    safetensors(d / "bf16_nan.safetensors", bf, layout)
    safetensors(d / "bf16_nan_payloads.safetensors",
                kvq(1, 2, 4, 16, 32, "BF16") + [("payloads", "BF16", [len(payloads)], bf16_bits(payloads))], layout)
    safetensors(d / "layers10000.safetensors", kvq(10000, 1, 1, 2, 2), layout)
    odd = kvq(1, 2, 4, 16, 32, names=("model/blk {}/../k..{{x}}", "model/blk {}/../v..{{x}}", "model/blk {}/../q..{{x}}"))
    odd += [(name, "F32", [2], f32([1.0, -2.0])) for name in ("{", "}", "{}", "..", "../../etc/passwd", "/abs", "a b",
                                                            " ", "layers.{layer}.k", "layers.0.k ")]
    safetensors(d / "odd_names.safetensors", odd + kvq(1, 2, 4, 16, 32), layout)


if __name__ == "__main__":
    main(sys.argv[1])
