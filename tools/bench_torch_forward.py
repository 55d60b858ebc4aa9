#!/usr/bin/python3
"""The forward pass tqlab's `BM_Forward` times, in PyTorch (Debian's python3-torch, CPU, float32),
on the same Llama checkpoint and tokens: the peer tools/bench_e2e.sh compares tqlab with.

    bench_torch_forward.py MODEL_DIR --ctx 512 [--threads 1] [--repeats 3] [--logits OUT.npy]

The forward follows transformers' LlamaForCausalLM in eager mode, written with torch operations
(transformers itself is not a Debian package): RMSNorm in float32, F.linear, RoPE from float32
inverse frequencies and float32 angles (inv_freq @ positions) with rotate_half, repeat_kv, scores
q k^T * head_dim^-0.5 plus a causal mask, softmax in float32, o_proj, SwiGLU, the final norm and
lm_head, logits for every position. Weights are read with tools/reference_forward.py's safetensors
reader. Prints one line: `ctx=N threads=T best_wall_s=W best_cpu_s=C tokens_per_s=R` (best of the
repeats after one warm-up), and with --logits saves the logits [ctx, vocab] as float32.
Tokens: id(t) = (7919 t + 13) mod vocab, as bench/forward_bench.cpp makes them.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_forward  # noqa: E402  (its safetensors reader)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--ctx", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--logits", type=Path)
    args = parser.parse_args(argv)
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("bench_torch_forward.py: needs Debian's python3-torch (apt-get install python3-torch)", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    config = json.loads((args.model / "config.json").read_text())
    if config["architectures"] != ["LlamaForCausalLM"] or config.get("rope_scaling"):
        print("bench_torch_forward.py: only a plain LlamaForCausalLM (no rope scaling, no biases)", file=sys.stderr)
        return 2
    w = {name: torch.from_numpy(values.astype(np.float32)) for name, values in reference_forward.read_weights(args.model).items()}
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    head_dim = config.get("head_dim") or hidden // heads
    eps, vocab, layers = config["rms_norm_eps"], config["vocab_size"], config["num_hidden_layers"]
    ctx = args.ctx
    ids = torch.tensor([(7919 * t + 13) % vocab for t in range(ctx)], dtype=torch.int64)
    inv_freq = 1.0 / (config.get("rope_theta", 10000.0) ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    positions = torch.arange(ctx, dtype=torch.int64).float()

    def rms_norm(x, weight):
        variance = x.pow(2).mean(-1, keepdim=True)
        return weight * (x * torch.rsqrt(variance + eps))

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def forward():
        freqs = (inv_freq[:, None] @ positions[None, :]).transpose(0, 1)  # [ctx, head_dim / 2], float32
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.full((ctx, ctx), float("-inf")).triu(1)
        x = w["model.embed_tokens.weight"][ids]
        for layer in range(layers):
            p = f"model.layers.{layer}."
            h = rms_norm(x, w[p + "input_layernorm.weight"])
            q = F.linear(h, w[p + "self_attn.q_proj.weight"]).view(ctx, heads, head_dim).transpose(0, 1)
            k = F.linear(h, w[p + "self_attn.k_proj.weight"]).view(ctx, kv_heads, head_dim).transpose(0, 1)
            v = F.linear(h, w[p + "self_attn.v_proj.weight"]).view(ctx, kv_heads, head_dim).transpose(0, 1)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = k.repeat_interleave(heads // kv_heads, dim=0)
            v = v.repeat_interleave(heads // kv_heads, dim=0)
            scores = torch.matmul(q, k.transpose(1, 2)) * head_dim ** -0.5 + mask
            attention = torch.matmul(F.softmax(scores, dim=-1, dtype=torch.float32), v)
            x = x + F.linear(attention.transpose(0, 1).reshape(ctx, heads * head_dim), w[p + "self_attn.o_proj.weight"])
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"])
            x = x + F.linear(F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) * F.linear(h, w[p + "mlp.up_proj.weight"]),
                             w[p + "mlp.down_proj.weight"])
        head = w["model.embed_tokens.weight"] if config.get("tie_word_embeddings") else w["lm_head.weight"]
        return F.linear(rms_norm(x, w["model.norm.weight"]), head)

    with torch.inference_mode():
        logits = forward()  # warm-up
        best_wall, best_cpu = float("inf"), float("inf")
        for _ in range(args.repeats):
            wall, cpu = time.perf_counter(), time.process_time()
            logits = forward()
            best_wall = min(best_wall, time.perf_counter() - wall)
            best_cpu = min(best_cpu, time.process_time() - cpu)
    if args.logits:
        np.save(args.logits, logits.numpy().astype(np.float32))
    print(f"ctx={ctx} threads={args.threads} best_wall_s={best_wall:.3f} best_cpu_s={best_cpu:.3f} "
          f"tokens_per_s={ctx / best_wall:.1f} torch={torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
