#!/usr/bin/python3
"""An independent forward pass of a Hugging Face Llama / Mistral / Qwen2 / Qwen3 checkpoint in float64
numpy, written from transformers' published modeling code (models/{llama,mistral,qwen2,qwen3}/
modeling_*.py and modeling_rope_utils.py), to check tqlab's C++ forward against.

    reference_forward.py MODEL_DIR TOKENS.npy --ctx N [--chunks C] [--bos] -o OUT.npz

Reads only config.json and the safetensors weights (one file or an index and shards; F32, F16,
BF16), with its own safetensors reader. Writes OUT.npz with `logits` [C, N, vocab] and, per layer L,
`q{L}` [C, q_heads, N, head_dim], `k{L}`, `v{L}` [C, kv_heads, N, head_dim]: q and k after RoPE (and
Qwen3's q/k norm), the tensors attention reads, as tqlab dump writes them.

The semantics, step by step (transformers' names):
  embed_tokens -> per layer: input_layernorm (RMSNorm: w * x / sqrt(mean(x^2) + eps)) -> q/k/v_proj
  (+ bias: Qwen2 on q/k/v; Llama/Qwen3 on q/k/v/o with attention_bias) -> Qwen3: q_norm/k_norm, an
  RMSNorm over each head's head_dim values -> RoPE (rotate_half: x * cos + cat(-x2, x1) * sin, channel
  i paired with i + head_dim/2; inv_freq = 1 / theta^(2i/d), then "linear" divides by factor and
  "llama3" divides the low frequencies by factor and blends the middle band) -> causal softmax
  attention with scale head_dim^-0.5, query head h reading kv head h // (heads / kv_heads)
  (repeat_kv), a sliding window where the config sets one (key j visible to query i when i - j < W)
  -> o_proj -> residual -> post_attention_layernorm -> down_proj(silu(gate_proj(x)) * up_proj(x))
  (+ biases with Llama's mlp_bias) -> residual; then model.norm and lm_head (the embedding matrix
  when tie_word_embeddings).
Angles are computed in float64 (transformers rounds them to float32; the difference is below 1e-6
relative at the positions the tests use).
"""

import argparse
import json
import math
import struct
import sys
from pathlib import Path

import numpy as np


def read_safetensors(path):
    data = Path(path).read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = data[8 + n + begin:8 + n + end]
        dtype = entry["dtype"]
        if dtype == "F32":
            values = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        elif dtype == "F16":
            values = np.frombuffer(raw, dtype="<f2").astype(np.float64)
        elif dtype == "BF16":
            values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            raise SystemExit(f"reference_forward.py: tensor {name} is {dtype}; only F32, F16, BF16 are read")
        out[name] = values.reshape(entry["shape"])
    return out


def read_weights(folder):
    folder = Path(folder)
    if (folder / "model.safetensors").exists():
        return read_safetensors(folder / "model.safetensors")
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    weights = {}
    for shard in sorted(set(index["weight_map"].values())):
        weights.update(read_safetensors(folder / shard))
    return weights


def inverse_frequencies(config, head_dim):
    params = config.get("rope_parameters") or {}
    theta = params.get("rope_theta", config.get("rope_theta", 10000.0))
    scaling = params if params else (config.get("rope_scaling") or {})
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    if kind == "default":
        return inv
    if kind == "linear":
        return inv / scaling["factor"]
    if kind == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > old / low, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old / high) & ~(wavelen > old / low)
        return np.where(medium, smoothed, scaled)
    raise SystemExit(f"reference_forward.py: rope type {kind} is not implemented")


def rms_norm(x, weight, eps):
    return weight * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def sliding_window(config, layer):
    arch = config["architectures"][0]
    window = config.get("sliding_window")
    if window is None or arch == "LlamaForCausalLM":
        return None
    if arch == "MistralForCausalLM":
        return window
    if "layer_types" in config:
        return window if config["layer_types"][layer] == "sliding_attention" else None
    if config.get("use_sliding_window", False) and layer >= config.get("max_window_layers", 28):
        return window
    return None


def forward(config, w, ids):
    arch = config["architectures"][0]
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    head_dim = config.get("head_dim") or (128 if arch == "Qwen3ForCausalLM" else hidden // heads)
    eps = config.get("rms_norm_eps", 1e-6)
    n = len(ids)
    angles = np.outer(np.arange(n, dtype=np.float64), inverse_frequencies(config, head_dim))
    cos = np.cos(np.concatenate([angles, angles], axis=-1))  # [n, head_dim]
    sin = np.sin(np.concatenate([angles, angles], axis=-1))
    bias = lambda name: w.get(name, 0.0)  # noqa: E731 (absent biases add nothing)
    x = w["model.embed_tokens.weight"][ids]
    captured = []
    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T + bias(p + "self_attn.q_proj.bias")).reshape(n, heads, head_dim)
        k = (h @ w[p + "self_attn.k_proj.weight"].T + bias(p + "self_attn.k_proj.bias")).reshape(n, kv_heads, head_dim)
        v = (h @ w[p + "self_attn.v_proj.weight"].T + bias(p + "self_attn.v_proj.bias")).reshape(n, kv_heads, head_dim)
        if arch == "Qwen3ForCausalLM":
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q * cos[:, None, :] + rotate_half(q) * sin[:, None, :]
        k = k * cos[:, None, :] + rotate_half(k) * sin[:, None, :]
        captured.append((q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2)))
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        visible = j <= i
        window = sliding_window(config, layer)
        if window is not None:
            visible &= (i - j) < window
        out = np.empty((n, heads, head_dim))
        for head in range(heads):
            g = head // (heads // kv_heads)
            scores = (q[:, head] @ k[:, g].T) * head_dim ** -0.5
            scores = np.where(visible, scores, -np.inf)
            scores -= scores.max(axis=1, keepdims=True)
            weights = np.exp(scores)
            weights /= weights.sum(axis=1, keepdims=True)
            out[:, head] = weights @ v[:, g]
        x = x + out.reshape(n, heads * head_dim) @ w[p + "self_attn.o_proj.weight"].T + bias(p + "self_attn.o_proj.bias")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = h @ w[p + "mlp.gate_proj.weight"].T + bias(p + "mlp.gate_proj.bias")
        up = h @ w[p + "mlp.up_proj.weight"].T + bias(p + "mlp.up_proj.bias")
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "mlp.down_proj.weight"].T + bias(p + "mlp.down_proj.bias")
    head = w["model.embed_tokens.weight"] if config.get("tie_word_embeddings", False) else w["lm_head.weight"]
    return rms_norm(x, w["model.norm.weight"], eps) @ head.T, captured


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("tokens", type=Path)
    parser.add_argument("--ctx", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=0)
    parser.add_argument("--bos", action="store_true")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    config = json.loads((args.model / "config.json").read_text())
    weights = read_weights(args.model)
    ids = np.load(args.tokens).astype(np.int64)
    chunks = args.chunks or len(ids) // args.ctx
    logits, per_layer = [], None
    for c in range(chunks):
        chunk = ids[c * args.ctx:(c + 1) * args.ctx].copy()
        if args.bos:
            chunk[0] = config["bos_token_id"]
        chunk_logits, captured = forward(config, weights, chunk)
        logits.append(chunk_logits)
        if per_layer is None:
            per_layer = [([], [], []) for _ in captured]
        for layer, tensors in enumerate(captured):
            for role, tensor in enumerate(tensors):
                per_layer[layer][role].append(tensor)
    out = {"logits": np.stack(logits)}
    for layer, (q, k, v) in enumerate(per_layer):
        out[f"q{layer}"], out[f"k{layer}"], out[f"v{layer}"] = np.stack(q), np.stack(k), np.stack(v)
    np.savez(args.output, **out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
