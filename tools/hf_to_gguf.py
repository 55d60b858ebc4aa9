#!/usr/bin/python3
"""Convert a Hugging Face Llama-style checkpoint folder to a GGUF v3 file llama.cpp loads.

Usage: tools/hf_to_gguf.py MODEL_DIR OUT.gguf [--dtype f32|f16|bf16|q8_0|q4_0|q4_k|q6_k|q4_k_m] [--ggml LIB]
                          [--dequantized DIR]

Reads MODEL_DIR/config.json, the safetensors weights (one file or an index and shards; F32, F16 or
BF16 under transformers' names) and MODEL_DIR/tokenizer.json (a byte-level BPE), and writes one GGUF v3 file:
the "llama" architecture's metadata keys, its tensor names, and the tokenizer as llama.cpp's "gpt2"
BPE vocabulary. Debian's python3 and numpy only; a test tool until tqlab writes GGUF itself.

What it follows (llama.cpp, read as a reference, nothing copied):
- the file layout: ggml/include/gguf.h and ggml/src/gguf.cpp (magic "GGUF", version 3, u64 counts,
  typed key/value pairs, tensor infos with ggml's dims fastest-first, data aligned to 32 bytes);
- the key names and value types: gguf-py/gguf/constants.py (Keys, GGUFValueType, GGMLQuantizationType,
  LlamaFileType) and conversion/base.py TextModel.set_gguf_parameters;
- the tensor names: gguf-py/gguf/constants.py MODEL_TENSOR / TENSOR_NAMES for MODEL_ARCH.LLAMA;
- the query and key rows: conversion/llama.py LlamaModel.permute. transformers' RoPE pairs channel i
  with i + head_dim/2 ("rotate half"); ggml's LLAMA rope (ggml-cpu ops.cpp, rope in normal mode) pairs
  2i with 2i + 1, so within each head, row 2i of the converted weight is HF row i and row 2i + 1 is
  HF row i + head_dim/2. The K cache llama.cpp stores is in this order too;
- the vocabulary: conversion/base.py TextModel._set_vocab_gpt2 (tokens in id order as the
  tokenizer's byte-level strings, token types NORMAL, the merges as "a b" strings, pre-tokenizer
  name "default") and src/llama-vocab.cpp llama_vocab::impl::load, which requires the merges key.

With --dtype f16 or bf16, matrices are stored as F16 (BF16) and vectors (the norms) stay F32, as
llama.cpp's converter does for its F16 output (file type MOSTLY_F16). With q8_0 or q4_0, matrices are
quantized by ggml's reference quantizers restated in numpy (tools/ggml_quantize.py); q4_k and q6_k
need --ggml LIB, llama.cpp's libggml-base.so (tools/llamacpp_reference's package), whose own
quantizer and decoder are called. A matrix whose rows are not a multiple of the type's block falls
back to F16 (llama-quantize first tries a type of blocks of 32, src/llama-quant.cpp; for the bundled
model's 688-wide down projection that fails too); vectors stay F32.
--dtype q4_k_m is llama-quantize's Q4_K_M mix (src/llama-quant.cpp, llama_tensor_get_type_impl, for
a Llama without experts): Q4_K everywhere but output.weight in Q6_K, and attn_v and ffn_down in Q6_K
in the layers its use_more_bits picks (the first and last eighth, and every third between).
--dequantized DIR writes beside it the Hugging Face folder of the weights the file decodes to
(F32 safetensors, the config and the tokenizer copied): the same model, exactly, for the tests.
"""

import argparse
import json
import os
import struct
import sys

import numpy as np

from ggml_quantize import GGML_LIBRARY_TYPES, QUANTIZERS, ggml_quantizer
from kv_dump_format import write_safetensors
from reference_forward import read_weights  # tools/: the one safetensors reader of our Python tools

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# gguf-py/gguf/constants.py GGUFValueType
UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9
# gguf-py/gguf/constants.py GGMLQuantizationType and LlamaFileType
GGML_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 8, "q4_k": 12, "q6_k": 14, "bf16": 30}
FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7, "q4_k": 14, "q6_k": 18, "bf16": 32, "q4_k_m": 15}
MIXES = {"q4_k_m": ("q4_k", "q6_k")}  # the file types that mix two ggml types: (default, more bits)
TOKEN_TYPE_NORMAL = 1


# transformers' per-layer names -> llama.cpp's (gguf-py TENSOR_NAMES for MODEL_ARCH.LLAMA).
LAYER_TENSORS = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
GLOBAL_TENSORS = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}


class ConvertError(Exception):
    pass


def permute_for_rope(weight, n_head):
    """Rows of a q/k projection [n_head * head_dim, n_in] from HF's rotate-half pairing (i, i + d/2)
    to ggml's adjacent pairing (2i, 2i + 1), per head: conversion/llama.py LlamaModel.permute."""
    rows = weight.shape[0]
    return (weight.reshape(n_head, 2, rows // n_head // 2, *weight.shape[1:])
            .swapaxes(1, 2)
            .reshape(weight.shape))


def gguf_string(text):
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def gguf_value(value_type, value):
    if value_type == UINT32:
        return struct.pack("<I", value)
    if value_type == INT32:
        return struct.pack("<i", value)
    if value_type == FLOAT32:
        return struct.pack("<f", value)
    if value_type == BOOL:
        return struct.pack("<B", 1 if value else 0)
    if value_type == STRING:
        return gguf_string(value)
    raise AssertionError(value_type)


def gguf_kv(key, value_type, value, element_type=None):
    """One key/value pair; an ARRAY takes element_type and a list."""
    out = gguf_string(key) + struct.pack("<I", value_type)
    if value_type == ARRAY:
        out += struct.pack("<IQ", element_type, len(value))
        out += b"".join(gguf_value(element_type, v) for v in value)
    else:
        out += gguf_value(value_type, value)
    return out


def metadata(config, tokenizer, dtype, name):
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    arch = "llama"
    vocab = tokenizer["model"]["vocab"]
    tokens = [None] * config["vocab_size"]
    for text, index in vocab.items():
        if not 0 <= index < len(tokens):
            raise ConvertError(f"tokenizer.json: token id {index} outside vocab_size {len(tokens)}")
        tokens[index] = text
    for added in tokenizer.get("added_tokens", []):
        tokens[added["id"]] = added["content"]
    tokens = [t if t is not None else f"[PAD{i}]" for i, t in enumerate(tokens)]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tokenizer["model"].get("merges", [])]
    pairs = [
        gguf_kv("general.architecture", STRING, arch),
        gguf_kv("general.name", STRING, name),
        gguf_kv("general.file_type", UINT32, FILE_TYPE[dtype]),
        gguf_kv(f"{arch}.block_count", UINT32, config["num_hidden_layers"]),
        gguf_kv(f"{arch}.context_length", UINT32, config["max_position_embeddings"]),
        gguf_kv(f"{arch}.embedding_length", UINT32, config["hidden_size"]),
        gguf_kv(f"{arch}.feed_forward_length", UINT32, config["intermediate_size"]),
        gguf_kv(f"{arch}.attention.head_count", UINT32, config["num_attention_heads"]),
        gguf_kv(f"{arch}.attention.head_count_kv", UINT32,
                config.get("num_key_value_heads", config["num_attention_heads"])),
        gguf_kv(f"{arch}.attention.key_length", UINT32, head_dim),
        gguf_kv(f"{arch}.attention.value_length", UINT32, head_dim),
        gguf_kv(f"{arch}.attention.layer_norm_rms_epsilon", FLOAT32, config["rms_norm_eps"]),
        gguf_kv(f"{arch}.rope.freq_base", FLOAT32, config.get("rope_theta", 10000.0)),
        gguf_kv(f"{arch}.rope.dimension_count", UINT32, head_dim),
        gguf_kv(f"{arch}.vocab_size", UINT32, config["vocab_size"]),
        gguf_kv("tokenizer.ggml.model", STRING, "gpt2"),
        gguf_kv("tokenizer.ggml.pre", STRING, "default"),
        gguf_kv("tokenizer.ggml.tokens", ARRAY, tokens, STRING),
        gguf_kv("tokenizer.ggml.token_type", ARRAY, [TOKEN_TYPE_NORMAL] * len(tokens), INT32),
        gguf_kv("tokenizer.ggml.merges", ARRAY, merges, STRING),
    ]
    if config.get("bos_token_id") is not None:
        pairs.append(gguf_kv("tokenizer.ggml.bos_token_id", UINT32, config["bos_token_id"]))
    if config.get("eos_token_id") is not None:
        pairs.append(gguf_kv("tokenizer.ggml.eos_token_id", UINT32, config["eos_token_id"]))
    # tqlab's token windows carry their own first token; llama.cpp must not add one.
    pairs.append(gguf_kv("tokenizer.ggml.add_bos_token", BOOL, False))
    return pairs


def gguf_tensors(config, hf):
    """(gguf name, float32 array) in file order, q/k rows permuted for ggml's RoPE."""
    rope_scaling = config.get("rope_scaling")
    if rope_scaling not in (None, {}):
        raise ConvertError(f"config.json: rope_scaling {rope_scaling!r} (this converter handles none)")
    n_head = config["num_attention_heads"]
    n_kv_head = config.get("num_key_value_heads", n_head)
    out = []
    seen = set()
    if config.get("tie_word_embeddings") and "lm_head.weight" not in hf:
        hf = dict(hf, **{"lm_head.weight": hf["model.embed_tokens.weight"]})
    for hf_name, gguf_name in GLOBAL_TENSORS.items():
        if hf_name not in hf:
            raise ConvertError(f"model.safetensors: missing tensor {hf_name}")
        out.append((gguf_name, hf[hf_name]))
        seen.add(hf_name)
    for layer in range(config["num_hidden_layers"]):
        for suffix, gguf_suffix in LAYER_TENSORS.items():
            hf_name = f"model.layers.{layer}.{suffix}"
            if hf_name not in hf:
                raise ConvertError(f"model.safetensors: missing tensor {hf_name}")
            weight = hf[hf_name]
            if suffix == "self_attn.q_proj.weight":
                weight = permute_for_rope(weight, n_head)
            elif suffix == "self_attn.k_proj.weight":
                weight = permute_for_rope(weight, n_kv_head)
            out.append((f"blk.{layer}.{gguf_suffix}", weight))
            seen.add(hf_name)
    extra = sorted(set(hf) - seen - {"lm_head.weight"})
    if extra:
        raise ConvertError(f"model.safetensors: tensors this converter does not map: {', '.join(extra)}")
    return out


def use_more_bits(layer, layers):
    """llama-quant.cpp's use_more_bits: the layers a _M mix gives more bits."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def tensor_dtype(dtype, gguf_name, layers):
    """The ggml type a matrix named `gguf_name` is stored in, in a file of `dtype`."""
    if dtype not in MIXES:
        return dtype
    default, more = MIXES[dtype]
    if gguf_name == "output.weight":
        return more
    parts = gguf_name.split(".")
    if parts[0] == "blk" and parts[2] in ("attn_v", "ffn_down") and use_more_bits(int(parts[1]), layers):
        return more
    return default


def gguf_name_of(hf_name):
    """llama.cpp's name of a transformers tensor (the inverse of the tables above)."""
    if hf_name in GLOBAL_TENSORS:
        return GLOBAL_TENSORS[hf_name]
    parts = hf_name.split(".", 3)  # model.layers.N.SUFFIX
    return f"blk.{parts[2]}.{LAYER_TENSORS[parts[3]]}"


def stored_form(array, dtype):
    """(ggml type name, bytes, the decoded float32 array) of one tensor stored as `dtype` (a
    ggml type: a mix is resolved per tensor by tensor_dtype first)."""
    stored = dtype if array.ndim >= 2 else "f32"
    if stored in QUANTIZERS and array.shape[-1] % getattr(QUANTIZERS[stored], "block", 32):
        stored = "f16"
    if stored in QUANTIZERS:
        data, decoded = QUANTIZERS[stored](array.reshape(-1, array.shape[-1]))
        return stored, data, decoded.reshape(array.shape)
    kept = np.ascontiguousarray(array, dtype=np.float16 if stored == "f16" else np.float32)
    return stored, kept.tobytes(), kept.astype(np.float32)


def write_gguf(path, kv_pairs, tensors, dtype, layers):
    def padding(n):
        return (ALIGNMENT - n % ALIGNMENT) % ALIGNMENT

    infos = b""
    payloads = []
    offset = 0
    for name, array in tensors:
        stored, data, _ = stored_form(array, tensor_dtype(dtype, name, layers))
        # ggml's ne[0] is the fastest-moving dimension: numpy's shape reversed.
        dims = list(reversed(array.shape))
        infos += gguf_string(name) + struct.pack("<I", len(dims))
        infos += b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", GGML_TYPE[stored], offset)
        payloads.append(data)
        offset += len(data) + padding(len(data))
    header = GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(kv_pairs))
    head = header + b"".join(kv_pairs) + infos
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(head + b"\0" * padding(len(head)))
        for data in payloads:
            f.write(data + b"\0" * padding(len(data)))
    os.replace(tmp, path)


def write_dequantized(folder, model_dir, hf, dtype, layers):
    """The Hugging Face folder of the weights a `dtype` file decodes to. Quantization works along rows
    and the RoPE permutation moves whole rows, so each HF matrix is decoded in its own row order."""
    os.makedirs(folder, exist_ok=True)
    for name in ("config.json", "tokenizer.json"):
        with open(f"{model_dir}/{name}", "rb") as source, open(f"{folder}/{name}", "wb") as target:
            target.write(source.read())
    weights = {name: stored_form(array, tensor_dtype(dtype, gguf_name_of(name), layers))[2]
               for name, array in hf.items()}
    write_safetensors(f"{folder}/model.safetensors", weights)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("out")
    parser.add_argument("--dtype", choices=sorted(set(GGML_TYPE) | set(MIXES)), default="f32")
    parser.add_argument("--dequantized", metavar="DIR", help="also write the decoded weights as an HF folder")
    parser.add_argument("--ggml", metavar="LIB", help="libggml-base.so, whose quantizers q4_k and q6_k use")
    args = parser.parse_args(argv)
    try:
        with open(f"{args.model_dir}/config.json") as f:
            config = json.load(f)
        with open(f"{args.model_dir}/tokenizer.json") as f:
            tokenizer = json.load(f)
        if tokenizer.get("model", {}).get("type") != "BPE":
            raise ConvertError(f"{args.model_dir}/tokenizer.json: model type "
                               f"{tokenizer.get('model', {}).get('type')!r} (expected BPE)")
        archs = config.get("architectures") or []
        if archs[:1] != ["LlamaForCausalLM"]:
            raise ConvertError(f"{args.model_dir}/config.json: architectures {archs!r} "
                               "(expected LlamaForCausalLM)")
        for stored in MIXES.get(args.dtype, (args.dtype,)):
            if stored in GGML_LIBRARY_TYPES:
                if not args.ggml:
                    raise ConvertError(f"--dtype {args.dtype} needs --ggml LIB (llama.cpp's libggml-base.so)")
                QUANTIZERS[stored] = ggml_quantizer(args.ggml, stored)
        hf = read_weights(args.model_dir)
        name = args.model_dir.rstrip("/").split("/")[-1]
        layers = config["num_hidden_layers"]
        write_gguf(args.out, metadata(config, tokenizer, args.dtype, name), gguf_tensors(config, hf), args.dtype,
                   layers)
        if args.dequantized:
            write_dequantized(args.dequantized, args.model_dir, hf, args.dtype, layers)
    except (ConvertError, OSError, KeyError, ValueError) as error:
        print(f"hf_to_gguf: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
