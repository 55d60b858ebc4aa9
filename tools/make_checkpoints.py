#!/usr/bin/python3
"""Writes small random-weight Hugging Face checkpoints, one folder per architecture variant tqlab runs,
plus a token file, for testing `tqlab ppl` / `tqlab dump` against tools/reference_forward.py.

    make_checkpoints.py OUT_DIR [--only NAME,...] [--seed S]
    make_checkpoints.py OUT_DIR --big --layers 12 --hidden 768 ...   (a large Llama for benchmarks)

numpy only (Debian's python3-numpy); no torch, no safetensors package. Folders written:

  llama3_rope     LlamaForCausalLM, rope_scaling {"rope_type": "llama3"} with a trained context of 32
                  tokens so that the scaling acts within a 64-token chunk, rope_theta 500000
  llama_linear    LlamaForCausalLM, rope_scaling {"type": "linear", "factor": 4}, attention_bias and
                  mlp_bias (biases on q/k/v/o and gate/up/down), multi-head attention (no
                  num_key_value_heads key)
  llama_bf16      LlamaForCausalLM with BF16 weights (rounded to nearest even from float32)
  llama_sharded   LlamaForCausalLM in three shards and a model.safetensors.index.json
  mistral         MistralForCausalLM, F16 weights, head_dim 40 given explicitly (hidden/heads is 32),
                  a sliding_window (96) longer than the test's chunks
  qwen2_tied      Qwen2ForCausalLM: q/k/v biases, tie_word_embeddings (no lm_head.weight)
  qwen3_qknorm    Qwen3ForCausalLM: per-head q_norm/k_norm, head_dim 48 (hidden/heads is 32)
  tokens.npy      int32 token ids, 256 of them, below every variant's vocabulary

Weights: matrices N(0, 1/fan_in), the embedding N(0, 1), norm weights 1 + N(0, 0.2^2), biases N(0, 0.2^2):
activations of order one, attention neither uniform nor one-hot.
"""

import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

BASE = {
    "vocab_size": 320,
    "hidden_size": 128,
    "intermediate_size": 192,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "max_position_embeddings": 256,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "tie_word_embeddings": False,
    "torch_dtype": "float32",
}


def variants():
    """name -> (config, dtype, shards)."""
    out = {}

    def config(architecture, model_type, **changes):
        c = dict(BASE, architectures=[architecture], model_type=model_type)
        c.update(changes)
        return {k: v for k, v in c.items() if v is not None}

    out["llama3_rope"] = (config("LlamaForCausalLM", "llama", rope_theta=500000.0,
                                 rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                               "high_freq_factor": 4.0, "original_max_position_embeddings": 32}),
                          "F32", 1)
    out["llama_linear"] = (config("LlamaForCausalLM", "llama", num_key_value_heads=None,
                                  rope_scaling={"type": "linear", "factor": 4.0}, attention_bias=True,
                                  mlp_bias=True), "F32", 1)
    out["llama_bf16"] = (config("LlamaForCausalLM", "llama", torch_dtype="bfloat16"), "BF16", 1)
    out["llama_sharded"] = (config("LlamaForCausalLM", "llama"), "F32", 3)
    out["mistral"] = (config("MistralForCausalLM", "mistral", head_dim=40, sliding_window=96, torch_dtype="float16"),
                      "F16", 1)
    out["qwen2_tied"] = (config("Qwen2ForCausalLM", "qwen2", tie_word_embeddings=True, use_sliding_window=False,
                                sliding_window=32, max_window_layers=1), "F32", 1)
    out["qwen3_qknorm"] = (config("Qwen3ForCausalLM", "qwen3", head_dim=48, attention_bias=False), "F32", 1)
    return out


def family(config):
    return config["architectures"][0]


def tensor_shapes(config):
    """(name, shape) of every tensor transformers stores for `config`, in its order."""
    hidden, inner, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    arch = family(config)
    head_dim = config.get("head_dim") or (128 if arch == "Qwen3ForCausalLM" else hidden // heads)
    qkv_bias = arch == "Qwen2ForCausalLM" or (arch in ("LlamaForCausalLM", "Qwen3ForCausalLM")
                                              and config.get("attention_bias", False))
    o_bias = arch in ("LlamaForCausalLM", "Qwen3ForCausalLM") and config.get("attention_bias", False)
    mlp_bias = arch == "LlamaForCausalLM" and config.get("mlp_bias", False)
    shapes = [("model.embed_tokens.weight", (vocab, hidden))]
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.append((p + "input_layernorm.weight", (hidden,)))
        for name, rows in (("q_proj", heads * head_dim), ("k_proj", kv_heads * head_dim), ("v_proj", kv_heads * head_dim)):
            shapes.append((p + f"self_attn.{name}.weight", (rows, hidden)))
            if qkv_bias:
                shapes.append((p + f"self_attn.{name}.bias", (rows,)))
        shapes.append((p + "self_attn.o_proj.weight", (hidden, heads * head_dim)))
        if o_bias:
            shapes.append((p + "self_attn.o_proj.bias", (hidden,)))
        if arch == "Qwen3ForCausalLM":
            shapes.append((p + "self_attn.q_norm.weight", (head_dim,)))
            shapes.append((p + "self_attn.k_norm.weight", (head_dim,)))
        shapes.append((p + "post_attention_layernorm.weight", (hidden,)))
        for name, shape in (("gate_proj", (inner, hidden)), ("up_proj", (inner, hidden)), ("down_proj", (hidden, inner))):
            shapes.append((p + f"mlp.{name}.weight", shape))
            if mlp_bias:
                shapes.append((p + f"mlp.{name}.bias", (shape[0],)))
    shapes.append(("model.norm.weight", (hidden,)))
    if not config.get("tie_word_embeddings", False):
        shapes.append(("lm_head.weight", (vocab, hidden)))
    return shapes


def random_tensor(name, shape, rng):
    if name.endswith("norm.weight"):
        return (1.0 + 0.2 * rng.standard_normal(shape)).astype(np.float32)
    if name.endswith(".bias"):
        return (0.2 * rng.standard_normal(shape)).astype(np.float32)
    if name == "model.embed_tokens.weight":
        return rng.standard_normal(shape).astype(np.float32)
    return (rng.standard_normal(shape) / np.sqrt(shape[1])).astype(np.float32)


def bf16_bits(values):
    """float32 -> bfloat16 bit patterns, round to nearest even (NaN not expected here)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    return ((bits + rounding) >> 16).astype(np.uint16)


def encode(values, dtype):
    if dtype == "F32":
        return np.ascontiguousarray(values, dtype="<f4").tobytes()
    if dtype == "F16":
        return np.ascontiguousarray(values, dtype="<f2").tobytes()
    if dtype == "BF16":
        return bf16_bits(values).astype("<u2").tobytes()
    raise ValueError(dtype)


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, dtype code, shape, bytes)."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for _, _, _, data in tensors:
            out.write(data)


def write_checkpoint(folder, config, dtype, shards, seed):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    rng = np.random.default_rng(seed)
    shapes = tensor_shapes(config)
    tensors = [(name, dtype, shape, encode(random_tensor(name, shape, rng), dtype)) for name, shape in shapes]
    if shards == 1:
        write_safetensors(folder / "model.safetensors", tensors, {"format": "pt"})
        return
    weight_map = {}
    for shard in range(shards):
        file = f"model-{shard + 1:05d}-of-{shards:05d}.safetensors"
        part = [t for i, t in enumerate(tensors) if i * shards // len(tensors) == shard]
        write_safetensors(folder / file, part, {"format": "pt"})
        weight_map.update({t[0]: file for t in part})
    index = {"metadata": {"total_size": sum(len(t[3]) for t in tensors)}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")


def write_big_llama(folder, args):
    """A Llama of the given sizes, F32 (or --dtype), written tensor by tensor without holding it all."""
    config = dict(BASE, architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=args.vocab,
                  hidden_size=args.hidden, intermediate_size=args.intermediate, num_hidden_layers=args.layers,
                  num_attention_heads=args.heads, num_key_value_heads=args.kv_heads, max_position_embeddings=4096)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    rng = np.random.default_rng(args.seed)
    shapes = tensor_shapes(config)
    size = {"F32": 4, "F16": 2, "BF16": 2}[args.dtype]
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in shapes:
        count = int(np.prod(shape))
        header[name] = {"dtype": args.dtype, "shape": list(shape), "data_offsets": [offset, offset + count * size]}
        offset += count * size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(folder / "model.safetensors", "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for name, shape in shapes:
            out.write(encode(random_tensor(name, shape, rng), args.dtype))
    params = sum(int(np.prod(shape)) for _, shape in shapes)
    print(f"wrote {folder}: LlamaForCausalLM, {params / 1e6:.1f} M parameters, {offset / 2**30:.2f} GiB of {args.dtype}")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", default="", help="comma-separated variant names (default: all)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--big", action="store_true", help="write one large Llama into OUT instead")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--intermediate", type=int, default=2048)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--kv-heads", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    args = parser.parse_args(argv)
    if args.big:
        write_big_llama(args.out, args)
        return 0
    chosen = [name for name in args.only.split(",") if name] or list(variants())
    table = variants()
    for name in chosen:
        if name not in table:
            print(f"make_checkpoints.py: unknown variant '{name}' (known: {', '.join(table)})", file=sys.stderr)
            return 2
        config, dtype, shards = table[name]
        write_checkpoint(args.out / name, config, dtype, shards, args.seed)
    ids = np.random.default_rng(args.seed + 1).integers(0, BASE["vocab_size"], 256).astype(np.int32)
    np.save(args.out / "tokens.npy", ids)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
