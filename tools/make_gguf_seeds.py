#!/usr/bin/python3
"""Writes the seed corpus of the gguf fuzz target (tests/fuzz/corpus/gguf/): a few small GGUF files,
valid ones of each version and value kind and broken ones near each check of io/gguf.h.

    tools/make_gguf_seeds.py OUT_DIR

Key/value pairs are encoded by tools/hf_to_gguf.py's helpers; tensor infos are written here so that
a seed can carry any type id and offset.
"""

import struct
import sys
from pathlib import Path

from hf_to_gguf import ARRAY, BOOL, FLOAT32, INT32, STRING, UINT32, gguf_kv, gguf_string

F32, Q8_0, Q4_K = 0, 8, 12


def gguf(kvs, tensors, version=3, alignment=32):
    """tensors: (name, ne, type, data bytes[, offset])."""
    pad = lambda n: (alignment - n % alignment) % alignment  # noqa: E731
    infos, payload, offset = b"", b"", 0
    for name, ne, ggml_type, data, *fixed in tensors:
        infos += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        infos += struct.pack("<IQ", ggml_type, fixed[0] if fixed else offset)
        payload += data + b"\0" * pad(len(data))
        offset += len(data) + pad(len(data))
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs) + infos
    return head + b"\0" * pad(len(head)) + payload


def main(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    kvs = [gguf_kv("general.architecture", STRING, "llama"), gguf_kv("llama.block_count", UINT32, 1),
           gguf_kv("llama.rope.freq_base", FLOAT32, 10000.0), gguf_kv("tokenizer.ggml.add_bos_token", BOOL, True),
           gguf_kv("tokenizer.ggml.tokens", ARRAY, ["a", "b", "<s>"], STRING),
           gguf_kv("tokenizer.ggml.token_type", ARRAY, [1, 1, 3], INT32)]
    norm = ("output_norm.weight", [4], F32, struct.pack("<4f", 1, 2, 3, 4))
    q8 = ("token_embd.weight", [32, 2], Q8_0, bytes(range(68)))
    q4k = ("output.weight", [256, 1], Q4_K, bytes(144))
    seeds = {
        "v3.gguf": gguf(kvs, [norm, q8, q4k]),
        "v2.gguf": gguf(kvs, [norm, q8], version=2),
        "aligned64.gguf": gguf(kvs + [gguf_kv("general.alignment", UINT32, 64)], [norm, q8], alignment=64),
        "no_tensors.gguf": gguf(kvs, []),
        "bad_offset.gguf": gguf(kvs, [norm, (*q8, 64)]),
        "partial_block.gguf": gguf(kvs, [norm, ("token_embd.weight", [16, 2], Q8_0, bytes(34))]),
        "unknown_type.gguf": gguf(kvs, [("x", [4], 99, bytes(16))]),
    }
    seeds["truncated.gguf"] = seeds["v3.gguf"][:-100]
    for name, data in seeds.items():
        (out / name).write_bytes(data)


if __name__ == "__main__":
    main(sys.argv[1])
