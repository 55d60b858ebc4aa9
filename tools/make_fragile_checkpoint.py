#!/usr/bin/python3
"""Writes a small random-weight Llama whose KV cache is fragile in one layer, and its tokens, for
`tqlab allocate` to find: every layer's keys and values get a bias (attention_bias), and the keys of
layer F a large one, the same for every token. A bias common to every key cancels in the softmax
(q.(k + b) - q.(k' + b) = q.(k - k')), but the quantization error it brings is proportional to |b|:
quantizing that layer's keys at a given type perturbs attention far more than in any other layer.

    make_fragile_checkpoint.py OUT_DIR [--layers 12] [--fragile 5] [--key-bias 16] [--seed 1]

numpy only; the tensors and their order are tools/make_checkpoints.py's. Writes OUT_DIR/config.json,
OUT_DIR/model.safetensors and OUT_DIR/tokens.npy (512 int32 ids).
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_checkpoints as checkpoints  # noqa: E402


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--fragile", type=int, default=5, help="the fragile layer (0-based)")
    parser.add_argument("--key-bias", type=float, default=16.0, help="RMS of the fragile layer's key bias")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if not 0 <= args.fragile < args.layers:
        print(f"make_fragile_checkpoint.py: --fragile {args.fragile} is not a layer of {args.layers}", file=sys.stderr)
        return 2
    config = dict(checkpoints.BASE, architectures=["LlamaForCausalLM"], model_type="llama",
                  num_hidden_layers=args.layers, attention_bias=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    rng = np.random.default_rng(args.seed)
    fragile = f"model.layers.{args.fragile}.self_attn.k_proj.bias"
    tensors = []
    for name, shape in checkpoints.tensor_shapes(config):
        values = checkpoints.random_tensor(name, shape, rng)
        if name == fragile:
            values = (args.key_bias * rng.standard_normal(shape)).astype(np.float32)
        tensors.append((name, "F32", shape, checkpoints.encode(values, "F32")))
    checkpoints.write_safetensors(args.out / "model.safetensors", tensors, {"format": "pt"})
    ids = np.random.default_rng(args.seed + 1).integers(0, config["vocab_size"], 512).astype(np.int32)
    np.save(args.out / "tokens.npy", ids)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
