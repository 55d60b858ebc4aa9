#!/usr/bin/python3
"""vLLM's KV cache formats re-implemented in numpy from vLLM's source, to hold tqlab's
`vllm_tq_key`, `vllm_uniform` and `vllm_fp8` quantizers to (tests/cli/vllm_reference.sh).

Written from vLLM's code, not copied (docs/SOURCES.md, "vLLM's KV cache presets", names each
file and function): the Lloyd-Max solver of turboquant/centroids.py (solve_lloyd_max), the key and
value store kernels of v1/attention/ops/triton_turboquant_store.py (_tq_fused_store_mse,
_store_quantized_value) and their decoders in triton_turboquant_decode.py (_tq_full_dequant_kv),
the Sylvester Hadamard matrix of turboquant_attn.py (_build_hadamard), and the fp8 stores of
triton_reshape_and_cache_flash.py (reshape_and_cache_kernel_flash with scale 1.0,
_reshape_cache_per_token_head). Float32 where vLLM computes in float32.

  vllm_reference.py prepare DUMP OUT       float32 copy of a KV dump plus one layer of adversarial rows
  vllm_reference.py check IN DECODED K V   compare tqlab's decoded tensors (roundtrip IN -> DECODED
                                           with --k K --v V) with this reference; exit 1 on a mismatch
Rules of the check: vllm_uniform and vllm_fp8 must agree exactly (every step is one IEEE float32
operation in both); a vllm_tq_key row must agree within 1e-5 of its norm, except a row with a rotated
coordinate within 1e-6 of a decision midpoint, where the float rounding of the rotation decides the
code (in vLLM too: cuBLAS and Triton sum in other orders); such rows are counted and may be at most
1 in 10,000 of the dump's rows. The adversarial layer's evenly spaced and quarter-step rows are built
to put rotated coordinates exactly on the middle midpoint (0), so there every such row may differ.
"""
import functools
import json
import math
import struct
import sys

import numpy as np

f32 = np.float32


# ------------------------------------------------------------------ safetensors
def read_safetensors(path):
    with open(path, "rb") as file:
        size = struct.unpack("<Q", file.read(8))[0]
        header = json.loads(file.read(size))
        data = file.read()
    dtypes = {"F16": np.float16, "F32": np.float32}
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtypes[entry["dtype"]]).reshape(entry["shape"])
    return header.get("__metadata__", {}), tensors


def write_safetensors(path, metadata, tensors):
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as file:
        file.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


# ------------------------------------------------------------------ vLLM's codebook (centroids.py)
@functools.lru_cache(maxsize=None)
def lloyd_max_levels(d, bits):
    """solve_lloyd_max(d, bits): Lloyd's iteration for N(0, 1/d) in Python floats, trapezoid
    integrals on 200 panels, at most 200 rounds, the converged round's levels discarded."""
    count = 2 ** bits
    variance = 1.0 / d
    sigma = math.sqrt(variance)

    def pdf(x):
        return (1.0 / math.sqrt(2 * math.pi * variance)) * math.exp(-x * x / (2 * variance))

    def trapezoid(f, a, b, n=200):
        h = (b - a) / n
        total = 0.5 * (f(a) + f(b))
        for i in range(1, n):
            total += f(a + i * h)
        return total * h

    lo, hi = -3.5 * sigma, 3.5 * sigma
    levels = [lo + (hi - lo) * (i + 0.5) / count for i in range(count)]
    for _ in range(200):
        edges = [lo * 3] + [(levels[i] + levels[i + 1]) / 2.0 for i in range(count - 1)] + [hi * 3]
        moved = []
        for i in range(count):
            a, b = edges[i], edges[i + 1]
            numerator = trapezoid(lambda x: x * pdf(x), a, b)
            denominator = trapezoid(pdf, a, b)
            moved.append(numerator / denominator if denominator > 1e-15 else levels[i])
        if max(abs(moved[i] - levels[i]) for i in range(count)) < 1e-10:
            break
        levels = moved
    levels = np.array(levels, dtype=f32)
    return levels, ((levels[:-1] + levels[1:]) / f32(2)).astype(f32)


def hadamard(d):
    """_build_hadamard: Sylvester construction divided by sqrt(d), float32."""
    h = np.ones((1, 1), dtype=f32)
    while h.shape[0] < d:
        h = np.block([[h, h], [h, -h]])
    return (h / f32(math.sqrt(d))).astype(f32)


# ------------------------------------------------------------------ the formats
def tq_key_decode(rows, bits, norm_correction):
    """rows: n x d float32. Returns (decoded float64, near_boundary per row)."""
    d = rows.shape[1]
    levels, midpoints = lloyd_max_levels(d, bits)
    h = hadamard(d)
    norms = np.sqrt(np.sum(rows.astype(np.float64) ** 2, axis=1)).astype(f32)
    x_hat = rows / (norms + f32(1e-8))[:, None]
    y = (x_hat @ h).astype(f32)                    # y = x_hat @ PiT, PiT = H (symmetric)
    codes = np.searchsorted(midpoints, y, side="right")  # the binary search: y >= m goes up
    y_exact = x_hat.astype(np.float64) @ h.astype(np.float64)
    near = np.min(np.abs(y_exact[:, :, None] - midpoints.astype(np.float64)[None, None, :]), axis=(1, 2)) < 1e-6
    c = levels[codes].astype(np.float64)
    if norm_correction:
        c = c / np.sqrt(np.sum(c * c, axis=1, keepdims=True) + 1e-16)
    norm16 = norms.astype(np.float16).astype(np.float64)
    return norm16[:, None] * (c @ h.astype(np.float64)), near, norm16


def uniform_decode(rows, bits):
    levels = f32(2 ** bits - 1)
    lo = rows.min(axis=1)
    scale = ((rows.max(axis=1) - lo) / levels).astype(f32)
    scale = np.where(scale > f32(1e-8), scale, f32(1e-8)).astype(f32)
    position = ((rows - lo[:, None]) / scale[:, None] + f32(0.5)).astype(f32)
    codes = np.minimum(np.maximum(np.trunc(position), 0), levels).astype(f32)
    scale16 = scale.astype(np.float16).astype(f32)
    zero16 = lo.astype(np.float16).astype(f32)
    return (codes * scale16[:, None] + zero16[:, None]).astype(f32)


def e4m3fn_values():
    """Values of the codes 0..126 (0x7F is NaN), ascending."""
    codes = np.arange(127)
    exponent, mantissa = codes >> 3, (codes & 7).astype(np.float64)
    values = np.where(exponent == 0, mantissa / 8 * 2.0 ** -6, (1 + mantissa / 8) * 2.0 ** (exponent - 7.0))
    return values


def to_e4m3fn(x):
    """Nearest E4M3FN value of float32 x, ties to the even code, saturated to +-448 (CUDA's satfinite)."""
    values = e4m3fn_values()
    magnitude = np.minimum(np.abs(x.astype(np.float64)), 448.0)
    above = np.clip(np.searchsorted(values, magnitude), 1, 126)
    below = above - 1
    to_below = magnitude - values[below]
    to_above = values[above] - magnitude
    pick = np.where(to_below < to_above, below, np.where(to_above < to_below, above,
                                                         np.where(below % 2 == 0, below, above)))
    return (np.sign(x) * values[pick]).astype(f32)


def fp8_decode(rows, token_head):
    if not token_head:
        return to_e4m3fn(rows)                 # k_scale = v_scale = 1.0: x / 1.0 cast to fp8
    amax = np.max(np.abs(rows), axis=1)
    scale = np.maximum((amax / f32(448.0)).astype(f32), f32(1e-6)).astype(f32)
    inverse = (f32(1.0) / scale).astype(f32)
    quantized = np.clip((rows * inverse[:, None]).astype(f32), f32(-448), f32(448))
    return (to_e4m3fn(quantized) * scale[:, None]).astype(f32)


# ------------------------------------------------------------------ commands
def prepare(dump, out):
    metadata, tensors = read_safetensors(dump)
    result = {name: array.astype(f32) for name, array in tensors.items()}
    layers = sorted({int(name.split(".")[1]) for name in tensors})
    adversarial = len(layers)
    rng = np.random.default_rng(2026)
    for role in ("q", "k", "v"):
        shape = result[f"layers.0.{role}"].shape
        x = rng.standard_normal(shape).astype(f32)
        rows = x.reshape(-1, shape[-1])
        n = rows.shape[0]
        rows[0::17] = 0.0                                      # zero vectors
        rows[1::17] = f32(3.1)                                 # constant vectors: s = 1e-8
        rows[2::17] *= f32(300.0)                              # beyond fp8's 448 at scale 1
        rows[3::17] *= f32(1e-7)                               # below the per-token-head scale floor
        rows[4::17] = np.round(rows[4::17] * 4) / 4            # quarter steps: ties for the rounding rules
        rows[5::17] = np.arange(shape[-1], dtype=f32) / 8      # evenly spaced: uniform codes on ties
        rows[6::17, 0] = f32(1000.0)                           # one large channel
        assert n > 17
        result[f"layers.{adversarial}.{role}"] = x
    metadata = dict(metadata)
    metadata["n_layers"] = str(adversarial + 1)
    metadata["vllm_reference.adversarial_layer"] = str(adversarial)
    write_safetensors(out, metadata, result)


def decode_reference(rows, spec):
    method, _, options = spec.partition(":")
    opts = dict((o.split("=") + [""])[:2] for o in options.split(",") if o)
    if method == "vllm_tq_key":
        return tq_key_decode(rows, int(opts["b"]), "nc" in opts)
    if method == "vllm_uniform":
        return uniform_decode(rows, int(opts["b"])), None, None
    if method == "vllm_fp8":
        return fp8_decode(rows, opts.get("scale") == "token_head"), None, None
    raise SystemExit(f"vllm_reference.py: no reference for spec {spec}")


def check(inp, decoded_path, key_spec, value_spec):
    metadata, inputs = read_safetensors(inp)
    adversarial = f"layers.{metadata.get('vllm_reference.adversarial_layer', '-1')}."
    _, decoded = read_safetensors(decoded_path)
    failures = 0
    for role, spec in (("k", key_spec), ("v", value_spec)):
        names = sorted(name for name in inputs if name.endswith("." + role))
        rows_total, dump_rows, boundary_rows, dump_boundary_rows, exact_rows = 0, 0, 0, 0, 0
        for name in names:
            x = inputs[name].reshape(-1, inputs[name].shape[-1]).astype(f32)
            ours = decoded[name].reshape(x.shape).astype(np.float64)
            reference, near, norms = decode_reference(x, spec)
            rows_total += x.shape[0]
            in_dump = not name.startswith(adversarial)
            dump_rows += x.shape[0] if in_dump else 0
            if spec.startswith("vllm_tq_key"):
                bad = np.max(np.abs(ours - reference), axis=1) > 1e-5 * np.maximum(norms, 1e-30)
                boundary_rows += int(np.sum(bad & near))
                dump_boundary_rows += int(np.sum(bad & near)) if in_dump else 0
                unexplained = np.flatnonzero(bad & ~near)
            else:
                bad = np.any(ours != reference.astype(np.float64), axis=1)
                unexplained = np.flatnonzero(bad)
            exact_rows += int(np.sum(~bad))
            for row in unexplained[:3]:
                column = int(np.argmax(np.abs(ours[row] - reference[row])))
                print(f"MISMATCH {spec} {name} row {row} channel {column}: tqlab {ours[row, column]!r} "
                      f"vLLM reference {float(reference[row, column])!r}")
            failures += len(unexplained)
        print(f"{spec} on {role}: {rows_total} vectors, {exact_rows} agree, {boundary_rows} differ on a "
              f"decision boundary ({dump_boundary_rows} of the dump's {dump_rows})")
        if dump_boundary_rows * 10000 > dump_rows:
            print(f"MISMATCH {spec}: {dump_boundary_rows} boundary rows of {dump_rows} is more than 1 in 10,000")
            failures += 1
    return 1 if failures else 0


def main(argv):
    if len(argv) == 4 and argv[1] == "prepare":
        prepare(argv[2], argv[3])
        return 0
    if len(argv) == 6 and argv[1] == "check":
        return check(*argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
