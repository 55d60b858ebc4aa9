#!/usr/bin/python3
"""Compares the statistics of `tqlab synth` tensors with a real KV dump (docs/SYNTH.md).

    /usr/bin/python3 tools/compare_synth.py --tqlab build/tqlab \\
        --real STORIES260K_DUMP.safetensors [--out-dir DIR]

The real dump is one of llama2.c's stories260K model (5 layers, 4 sequences of 256 tokens, head
dim 8) in tqlab's names; it is not part of the repository. Writes two synthetic files with `tqlab synth` (one shaped like the real dump, one with synth's
defaults), runs `tqlab inspect --json` on all three files, and prints a Markdown table per file
with, per layer:

- K/V ratio: mean key norm / mean value norm (from inspect --json; recomputed here as a check);
- top/median ch: per kv head, the largest key channel RMS over the median channel RMS, averaged
  over heads (outlier channels are a property of a head, so heads are not pooled);
- kurtosis med/max: excess kurtosis of each key channel over (seq, token), per (kv head, channel);
  the median and the largest (0 for a Gaussian channel);
- entropy, H/H_unif, top-1, sink, gap: of causal softmax(q.k / sqrt(d)) with grouped-query
  attention (q head h reads kv head h * Hkv // Hq), over every query t >= 1 of every sequence and
  q head: the mean entropy in nats, the mean entropy over that of uniform attention to t + 1 keys,
  the mean largest weight, the mean weight on token 0 (attention sink), and the median logit gap
  between the best and the second-best key (how far a key error must move a logit to change
  the arg-max). Uniform attention would give H/H_unif = 1 and top-1 = sink = mean 1/(t + 1),
  printed above each table.

Files are read as safetensors with the axes the file's "layout" metadata names (seq head token
dim, or head token dim). Debian's python3 and python3-numpy only.
"""

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kv_dump_format import read_safetensors  # noqa: E402  (the tools' one safetensors reader)


def as_seq_head_token_dim(array, layout):
    axes = layout.split()
    if axes == ["head", "token", "dim"]:
        return array[np.newaxis]
    if axes == ["seq", "head", "token", "dim"] or axes == ["batch", "head", "token", "dim"]:
        return array
    sys.exit(f"unsupported layout {layout!r}")


def excess_kurtosis(samples):
    """Per column of samples [n, columns]: E[(x - mean)^4] / var^2 - 3."""
    centered = samples - samples.mean(axis=0)
    variance = (centered**2).mean(axis=0)
    return (centered**4).mean(axis=0) / np.maximum(variance, 1e-300) ** 2 - 3.0


def attention_stats(queries, keys):
    """Over queries t >= 1: mean entropy (nats), entropy / log(t + 1), top-1 weight, weight on
    token 0, and the median logit gap between the best and second-best key.

    queries [seq, q_heads, tokens, d], keys [seq, kv_heads, tokens, d]."""
    seqs, q_heads, tokens, d = queries.shape
    kv_heads = keys.shape[1]
    causal = np.tril(np.ones((tokens, tokens), dtype=bool))
    uniform_entropy = np.log(np.arange(1, tokens + 1))[1:]
    entropy, relative, top1, sink, gap = [], [], [], [], []
    for s in range(seqs):
        for h in range(q_heads):
            k = keys[s, h * kv_heads // q_heads]
            logits = queries[s, h] @ k.T / math.sqrt(d)
            logits = np.where(causal, logits, -np.inf)
            best_two = np.sort(logits[1:], axis=1)[:, -2:]
            gap.append(best_two[:, 1] - best_two[:, 0])
            logits -= logits.max(axis=1, keepdims=True)
            weights = np.exp(logits)
            weights /= weights.sum(axis=1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                terms = np.where(weights > 0, -weights * np.log(weights), 0.0)
            h_t = terms.sum(axis=1)[1:]
            entropy.append(h_t)
            relative.append(h_t / uniform_entropy)
            top1.append(weights.max(axis=1)[1:])
            sink.append(weights[1:, 0])
    def mean(parts):
        return float(np.concatenate(parts).mean())

    return mean(entropy), mean(relative), mean(top1), mean(sink), float(np.median(np.concatenate(gap)))


def layer_stats(tensors, layout, layer):
    q = as_seq_head_token_dim(tensors[f"layers.{layer}.q"], layout)
    k = as_seq_head_token_dim(tensors[f"layers.{layer}.k"], layout)
    v = as_seq_head_token_dim(tensors[f"layers.{layer}.v"], layout)
    key_norm = np.linalg.norm(k, axis=-1).mean()
    value_norm = np.linalg.norm(v, axis=-1).mean()
    top_over_median, kurtosis = [], []
    for head in range(k.shape[1]):
        samples = k[:, head].reshape(-1, k.shape[-1])  # [(seq, token), channel]
        rms = np.sqrt((samples**2).mean(axis=0))
        top_over_median.append(rms.max() / np.median(rms))
        kurtosis.append(excess_kurtosis(samples))
    kurtosis = np.concatenate(kurtosis)
    entropy, relative, top1, sink, gap = attention_stats(q, k)
    return {
        "kv_ratio": key_norm / value_norm,
        "top_over_median": float(np.mean(top_over_median)),
        "kurtosis_median": float(np.median(kurtosis)),
        "kurtosis_max": float(kurtosis.max()),
        "entropy": entropy,
        "relative_entropy": relative,
        "top1": top1,
        "sink": sink,
        "gap": gap,
    }


def inspect_json(tqlab, path):
    result = subprocess.run([tqlab, "inspect", "--json", str(path)], check=True, capture_output=True, text=True)
    return json.loads(result.stdout)


def report(label, path, tqlab):
    tensors, metadata = read_safetensors(path)
    layout = metadata.get("layout", "head token dim")
    inspected = inspect_json(tqlab, path)
    k0 = as_seq_head_token_dim(tensors["layers.0.k"], layout)
    q0 = as_seq_head_token_dim(tensors["layers.0.q"], layout)
    seqs, kv_heads, tokens, d = k0.shape
    print(f"\n### {label}\n\n`{path.name}`: {len(inspected['kv_layers'])} layers, {seqs} seqs x {tokens} tokens, "
          f"{q0.shape[1]} q heads, {kv_heads} kv heads, head dim {d}; uniform attention: top-1 = sink = "
          f"{np.mean(1.0 / np.arange(2, tokens + 1)):.3f}\n")
    print("| layer | K/V ratio | top/median ch | kurtosis med | kurtosis max | entropy (nats) | H/H_unif | top-1 | sink "
          "| gap |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for layer_report in inspected["kv_layers"]:
        layer = layer_report["layer"]
        stats = layer_stats(tensors, layout, layer)
        # inspect and this script measure the same ratio; a disagreement means one of them is wrong.
        if not math.isclose(stats["kv_ratio"], layer_report["norm_ratio"], rel_tol=1e-6):
            sys.exit(f"{path}: layer {layer}: K/V ratio {stats['kv_ratio']} here, {layer_report['norm_ratio']} by inspect")
        rows.append(stats)
        print_row(str(layer), stats)
    print_row("mean", {key: float(np.mean([row[key] for row in rows])) for key in rows[0]})
    return rows


def print_row(label, s):
    print(f"| {label} | {s['kv_ratio']:.1f} | {s['top_over_median']:.2f} | {s['kurtosis_median']:.2f} | "
          f"{s['kurtosis_max']:.2f} | {s['entropy']:.2f} | {s['relative_entropy']:.2f} | {s['top1']:.2f} | "
          f"{s['sink']:.3f} | {s['gap']:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tqlab", required=True, help="the tqlab binary")
    parser.add_argument("--real", type=Path, required=True, help="the real dump (stories260K, safetensors)")
    parser.add_argument("--out-dir", type=Path, help="where to write the synth files (default: a temporary dir)")
    parser.add_argument("--seed", type=int, default=0, help="synth seed (default: %(default)s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out_dir = args.out_dir or Path(scratch)
        out_dir.mkdir(parents=True, exist_ok=True)
        matched = out_dir / "synth_matched.safetensors"
        default = out_dir / "synth_default.safetensors"
        subprocess.run([args.tqlab, "synth", "-o", str(matched), "--layers", "5", "--kv-heads", "4", "--q-heads", "8",
                        "--seqs", "4", "--tokens", "256", "--dim", "8", "--seed", str(args.seed)], check=True)
        subprocess.run([args.tqlab, "synth", "-o", str(default), "--seed", str(args.seed)], check=True)
        report("Real dump (stories260K)", args.real, args.tqlab)
        report("synth, shaped like the real dump", matched, args.tqlab)
        report("synth, defaults", default, args.tqlab)


if __name__ == "__main__":
    main()
