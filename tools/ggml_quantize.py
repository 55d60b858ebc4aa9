"""ggml's reference block quantizers for q8_0 and q4_0 in numpy, as ggml-quants.c defines them
(quantize_row_q8_0_ref, quantize_row_q4_0_ref, dequantize_row_q8_0, dequantize_row_q4_0; the
block structs of ggml-common.h), for the test GGUF files tools/hf_to_gguf.py writes. Read, not
copied; the arithmetic is float32 as in C.

Each works on rows of a 2-D float32 array whose row length is a multiple of its block (32; bf16: 1)
and returns (packed bytes, the decoded float32 array of the same shape).
  q8_0: 34 bytes a block: an fp16 scale d = max|x| / 127, then 32 int8 codes round(x / d)
        (roundf: halves away from zero); decoded as d * code.
  q4_0: 18 bytes a block: an fp16 scale d = m / -8, m the value of largest magnitude, then 16 bytes,
        byte j holding the codes of values j (low nibble) and j + 16 (high), each
        min(15, trunc(x / d + 8.5)); decoded as d * (code - 8).
"""

import numpy as np

BLOCK = 32


def _blocks(rows):
    """The rows as blocks of 32 float32 values."""
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    if rows.ndim != 2 or rows.shape[1] % BLOCK:
        raise ValueError(f"rows of shape {rows.shape}: expected 2-D rows of a multiple of {BLOCK}")
    return rows.reshape(-1, BLOCK)


def _inverse(d):
    """1/d in float32, 0 where d is 0 (ggml: id = d ? 1.0f/d : 0.0f)."""
    safe = np.where(d == 0, np.float32(1), d)
    return np.where(d == 0, np.float32(0), np.float32(1) / safe).astype(np.float32)


def quantize_q8_0(rows):
    x = _blocks(rows)
    d = (np.abs(x).max(axis=1) / np.float32(127)).astype(np.float32)
    scaled = (x * _inverse(d)[:, None]).astype(np.float32).astype(np.float64)
    codes = (np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)).astype(np.int8)
    d16 = d.astype(np.float16)
    packed = np.empty((x.shape[0], 34), dtype=np.uint8)
    packed[:, :2] = d16.view(np.uint8).reshape(-1, 2)
    packed[:, 2:] = codes.view(np.uint8)
    decoded = d16.astype(np.float32)[:, None] * codes.astype(np.float32)
    return packed.tobytes(), decoded.reshape(np.shape(rows))


def quantize_q4_0(rows):
    x = _blocks(rows)
    largest = x[np.arange(x.shape[0]), np.abs(x).argmax(axis=1)]  # the first of equal magnitudes
    d = (largest / np.float32(-8)).astype(np.float32)
    scaled = (x * _inverse(d)[:, None]).astype(np.float32)
    codes = np.minimum(15, np.trunc(scaled + np.float32(8.5)).astype(np.int8)).astype(np.uint8)
    d16 = d.astype(np.float16)
    packed = np.empty((x.shape[0], 18), dtype=np.uint8)
    packed[:, :2] = d16.view(np.uint8).reshape(-1, 2)
    packed[:, 2:] = codes[:, :16] | (codes[:, 16:] << 4)
    decoded = d16.astype(np.float32)[:, None] * (codes.astype(np.float32) - np.float32(8))
    return packed.tobytes(), decoded.reshape(np.shape(rows))


QUANTIZERS = {"q8_0": quantize_q8_0, "q4_0": quantize_q4_0}


def quantize_bf16(rows):
    """bf16 as ggml_fp32_to_bf16 rounds a finite float: to nearest, ties to even (no NaN here)."""
    bits = np.ascontiguousarray(rows, dtype=np.float32).view(np.uint32).astype(np.uint64)
    kept = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    decoded = (kept.astype(np.uint32) << 16).view(np.float32)
    return kept.tobytes(), decoded.reshape(np.shape(rows))


quantize_bf16.block = 1
QUANTIZERS["bf16"] = quantize_bf16

# ggml's own quantizers through libggml-base (tools/llamacpp_reference's package), for the types
# whose reference quantizer is too long to restate here: ggml_quantize_chunk encodes (without an
# importance matrix: quantize_row_*_ref), dequantize_row_* decodes. ggml_type ids of ggml.h.
GGML_LIBRARY_TYPES = {"q4_k": (12, "dequantize_row_q4_K", 256), "q6_k": (14, "dequantize_row_q6_K", 256)}


def ggml_quantizer(library_path, name):
    import ctypes

    type_id, decoder, block = GGML_LIBRARY_TYPES[name]
    lib = ctypes.CDLL(library_path)
    lib.ggml_quantize_init.argtypes = [ctypes.c_int]
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    lib.ggml_row_size.restype = ctypes.c_size_t
    lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    decode = getattr(lib, decoder)
    decode.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    lib.ggml_quantize_init(type_id)

    def quantize(rows):
        x = np.ascontiguousarray(rows, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] % block:
            raise ValueError(f"rows of shape {x.shape}: expected 2-D rows of a multiple of {block}")
        out = np.zeros(lib.ggml_row_size(type_id, x.shape[1]) * x.shape[0], dtype=np.uint8)
        written = lib.ggml_quantize_chunk(type_id, x.ctypes.data, out.ctypes.data, 0, x.shape[0], x.shape[1], None)
        if written != out.size:
            raise ValueError(f"ggml_quantize_chunk wrote {written} bytes, expected {out.size}")
        decoded = np.empty_like(x)
        decode(out.ctypes.data, decoded.ctypes.data, x.size)
        return out.tobytes(), decoded

    quantize.block = block
    return quantize
