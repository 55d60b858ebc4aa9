#!/usr/bin/env python3
"""Write a vocabulary-only GGUF (no tensors) from a Hugging Face tokenizer.json, for tests.

    tokenizer_to_gguf.py TOKENIZER_JSON OUT.gguf --model gpt2 --pre NAME [--bos TEXT] [--eos TEXT]
    tokenizer_to_gguf.py TOKENIZER_JSON OUT.gguf --model llama [--bos TEXT] [--eos TEXT] [--unk TEXT]

The keys are those llama.cpp's convert_hf_to_gguf.py writes and src/llama-vocab.cpp
(llama_vocab::impl::load) reads: tokenizer.ggml.model, .pre, .tokens, .token_type, .merges (gpt2)
or .scores (llama), .bos_token_id / .eos_token_id / .unknown_token_id, plus the few llama.*
hyperparameters llama.cpp needs to open a file with vocab_only (as its models/ggml-vocab-*.gguf).

Token types (llama.h llama_token_type): added tokens marked special are CONTROL (3), other added
tokens USER_DEFINED (4), "<0xXX>" tokens of a llama vocabulary BYTE (6), the unk token UNKNOWN (2),
the rest NORMAL (1). A llama vocabulary's scores are what a SentencePiece model holds for a BPE
vocabulary: a token made by merge r scores -r (earlier merges first), every other token
-(1e6 + id), control tokens 0.
add_bos_token is written only when --add-bos/--no-add-bos says so (absent: llama.cpp's default).
"""
import argparse
import json
import sys

from hf_to_gguf import ARRAY, BOOL, FLOAT32, INT32, STRING, UINT32, gguf_kv, write_gguf

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE = 1, 2, 3, 4, 6


def merge_pairs(model):
    return [m.split(" ", 1) if isinstance(m, str) else list(m) for m in model.get("merges", [])]


def vocabulary(tokenizer):
    vocab = tokenizer["model"]["vocab"]
    size = max(list(vocab.values()) + [a["id"] for a in tokenizer.get("added_tokens", [])]) + 1
    tokens = [None] * size
    for text, index in vocab.items():
        tokens[index] = text
    types = [NORMAL] * size
    for added in tokenizer.get("added_tokens", []):
        tokens[added["id"]] = added["content"]
        types[added["id"]] = CONTROL if added.get("special") else USER_DEFINED
    tokens = [t if t is not None else f"[PAD{i}]" for i, t in enumerate(tokens)]
    return tokens, types


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tokenizer_json")
    parser.add_argument("out")
    parser.add_argument("--model", choices=["gpt2", "llama"], required=True)
    parser.add_argument("--pre", default=None, help="gpt2: tokenizer.ggml.pre")
    parser.add_argument("--bos")
    parser.add_argument("--eos")
    parser.add_argument("--unk")
    bos_flag = parser.add_mutually_exclusive_group()
    bos_flag.add_argument("--add-bos", dest="add_bos", action="store_true", default=None)
    bos_flag.add_argument("--no-add-bos", dest="add_bos", action="store_false")
    args = parser.parse_args(argv)
    with open(args.tokenizer_json, encoding="utf-8") as f:
        tokenizer = json.load(f)
    tokens, types = vocabulary(tokenizer)
    index = {t: i for i, t in enumerate(tokens)}
    pairs = [
        gguf_kv("general.architecture", STRING, "llama"),
        gguf_kv("general.name", STRING, "vocab"),
        gguf_kv("llama.block_count", UINT32, 1),
        gguf_kv("llama.context_length", UINT32, 4096),
        gguf_kv("llama.embedding_length", UINT32, 64),
        gguf_kv("llama.feed_forward_length", UINT32, 128),
        gguf_kv("llama.attention.head_count", UINT32, 1),
        gguf_kv("llama.attention.layer_norm_rms_epsilon", FLOAT32, 1e-5),
        gguf_kv("tokenizer.ggml.model", STRING, args.model),
    ]
    merges = merge_pairs(tokenizer["model"])
    if args.model == "gpt2":
        if args.pre:
            pairs.append(gguf_kv("tokenizer.ggml.pre", STRING, args.pre))
        pairs.append(gguf_kv("tokenizer.ggml.merges", ARRAY, [f"{a} {b}" for a, b in merges], STRING))
    else:
        scores = [-(1e6 + i) for i in range(len(tokens))]
        for rank, (a, b) in enumerate(merges):
            made = index.get(a + b)
            if made is not None and scores[made] <= -1e6:
                scores[made] = -float(rank)
        for i, text in enumerate(tokens):
            if types[i] == CONTROL:
                scores[i] = 0.0
            elif len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
                types[i] = BYTE
        if args.unk is not None:
            types[index[args.unk]] = UNKNOWN
        pairs.append(gguf_kv("tokenizer.ggml.scores", ARRAY, scores, FLOAT32))
    pairs.append(gguf_kv("tokenizer.ggml.tokens", ARRAY, tokens, STRING))
    pairs.append(gguf_kv("tokenizer.ggml.token_type", ARRAY, types, INT32))
    for flag, key in ((args.bos, "bos"), (args.eos, "eos"), (args.unk, "unknown")):
        if flag is not None:
            pairs.append(gguf_kv(f"tokenizer.ggml.{key}_token_id", UINT32, index[flag]))
    if args.add_bos is not None:
        pairs.append(gguf_kv("tokenizer.ggml.add_bos_token", BOOL, args.add_bos))
    write_gguf(args.out, pairs, [], "f32", 0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
