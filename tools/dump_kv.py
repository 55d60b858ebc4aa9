#!/usr/bin/env python3
"""Dumps the post-RoPE keys, values and queries of a Hugging Face causal LM to one safetensors file
that tqlab reads as it is (`tqlab inspect`, `tqlab sweep`, `tqlab roundtrip`).

    python3 tools/dump_kv.py --model Qwen/Qwen2.5-0.5B -o kv.safetensors
    python3 tools/dump_kv.py --model meta-llama/Llama-3.2-1B --text my_text.txt --max-tokens 4096 \\
        --dtype bf16 --device cuda -o llama.safetensors

Needs PyTorch and transformers (>= 4.51, for the AttentionInterface below); they are imported only
when a model is dumped, so `--help` works without them, and without them the script stops with a
message saying what to install (exit 2).

What is written (the file layout is tools/kv_dump_format.py's, tested without torch):
  layers.{L}.k, layers.{L}.v   keys and values of layer L from the model's KV cache, post-RoPE,
                               axes batch head token dim (kv heads), in the model's dtype
                               (bfloat16 as safetensors BF16)
  layers.{L}.q                 queries of layer L, post-RoPE, batch head token dim (query heads)
  input_ids, attention_mask, position_ids   the tokens that produced them (I64)
  __metadata__                 layout, the name templates tqlab uses by default, model id and
                               revision, dtype, tokens, attention scale, rope theta and scaling,
                               head counts and dims, versions, the text's source and sha256

How keys and values are obtained: one forward pass over the text with use_cache=True; the returned
`past_key_values` is read in whichever form this transformers version returns: a Cache whose
`layers[i].keys / .values` hold [batch, kv_heads, tokens, head_dim] (transformers >= 4.56), a
DynamicCache converted with its documented `to_legacy_cache()`, or the legacy tuple of (key, value)
pairs. HF attention modules apply RoPE before updating the cache, so cached keys are post-RoPE.

How queries are obtained: transformers' attention modules compute
q = rotary(q_norm?(q_proj(h))) and hand q, k, v to an attention function looked up by name in the
documented AttentionInterface registry. This script registers a function under the name
"tqlab_capture" that records the query tensor it is given ([batch, q_heads, tokens, head_dim],
post-RoPE, exactly what the model attends with, q_norm included where the model has one) and the
`scaling` the model passes, then runs transformers' own SDPA attention, so the model's outputs are
unchanged. The same name is registered in AttentionMaskInterface so the causal mask is built as for
SDPA. Covered: architectures whose attention goes through that registry with a `layer_idx` on the
module: Llama/Mistral/Qwen2/Qwen3-style q_proj + rotary attention, which this script was written
against, and by the same mechanism other decoder-only models of transformers >= 4.51 that use the
registry (MLA models such as DeepSeek-V3, with K 192 / V 128, hand it the same post-RoPE q, k, v;
not run here). A model that does not use the registry (older or remote-code models) records no
queries: the script then stops and says so; `--no-queries` writes keys and values only.
Not covered: logit soft-capping (Gemma 2), which SDPA cannot do, so the script refuses such models
rather than dump hidden states the real model never has. Sliding windows are applied by the mask
as the model asks and recorded in the metadata (sliding_window_layers), but tqlab's attention
metrics attend to every earlier token of a chunk; a sliding-window cache that keeps fewer tokens
than the text is refused (use --max-tokens at most the window).

Tested here (no torch): tools/kv_dump_format.py, by tests/cli/kv_dump_format.sh, which writes dumps
shaped like real models and reads them back with tqlab. Not tested here: everything that needs
torch/transformers (model loading, the attention capture, the cache readers).
"""

import argparse
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kv_dump_format  # noqa: E402  (numpy only)

CAPTURE_NAME = "tqlab_capture"

BUILT_IN_PASSAGE = """\
A lighthouse keeper kept a ledger of every ship that passed the point. Each entry held the hour,
the direction of the wind, the colour of the hull and a few words about the cargo when it could
be guessed from the way the vessel sat in the water. Over forty years the ledger grew to eleven
volumes. Most pages are dull: grain going south in autumn, timber going north in spring, the same
steamers returning every fortnight until one week they did not. But the keeper also wrote down
what he could not explain. On a calm night in March a schooner passed with every lamp lit and no
one on deck. In a storm in 1911 a rowing boat came ashore carrying a sealed tin of letters, all
addressed to the same street in a town that no map of the coast showed. He copied the addresses
into the margin and underlined them twice.

Reading the ledger now, one notices how much of it is repetition and how little of it is noise.
The wind is nearly always from the west. The steamers keep their schedule to the quarter hour.
A reader who remembers the first volume can predict most of the eleventh, and the surprises stand
out precisely because everything around them is so regular. The keeper seems to have known this.
In the last volume he stopped recording the ordinary ships at all and kept only the exceptions,
one or two a month, each described at length, as if the routine had become a background he could
carry in his head and only the departures from it were worth the ink.

The final entry is dated the first of November. It reports a clear sky, a light northerly wind,
and a single ship, unnamed, heading out to sea with its lights dimmed. Below it, in a different
hand, someone has written the number of the page on which the ledger began.
"""


def fail(message):
    print(f"dump_kv.py: {message}", file=sys.stderr)
    sys.exit(2)


def import_torch():
    """torch and transformers, imported only when a model is dumped."""
    try:
        import torch
        import transformers
    except ImportError as error:
        fail(f"needs PyTorch and transformers ({error}); install them, e.g. `pip install torch transformers`, "
             "or run this script where they are installed")
    if not hasattr(transformers, "AttentionInterface"):
        fail(f"transformers {transformers.__version__} has no AttentionInterface, which this script uses to "
             "capture queries; upgrade to transformers >= 4.51")
    return torch, transformers


class QueryCapture:
    """Records, per layer, the post-RoPE queries an attention module hands to the attention function."""

    def __init__(self):
        self.queries = {}   # layer -> tensor [batch, q_heads, tokens, head_dim], on the CPU
        self.scaling = {}   # layer -> float or None
        self.extras = {}    # layer -> {"sliding_window": ...} when the model passes one

    def __call__(self, module, query, key, value, attention_mask, *args, **kwargs):
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        layer = getattr(module, "layer_idx", None)
        if layer is None:
            fail(f"attention module {type(module).__name__} has no layer_idx: cannot tell its layer")
        if layer in self.queries:
            fail(f"layer {layer}'s attention ran twice in one forward pass (shared layers?); not supported")
        if kwargs.get("softcap"):
            # SDPA, which this function hands the computation to, has no logit soft-capping:
            # every later layer would see other hidden states than the real model's.
            fail(f"layer {layer} caps its attention logits (softcap={kwargs['softcap']}, e.g. Gemma 2), which the "
                 "SDPA attention this capture runs cannot do; this architecture is not covered")
        self.queries[layer] = query.detach().to("cpu")
        self.scaling[layer] = kwargs.get("scaling")
        if kwargs.get("sliding_window"):
            self.extras[layer] = {"sliding_window": kwargs["sliding_window"]}
        return sdpa_attention_forward(module, query, key, value, attention_mask, *args, **kwargs)


def register_capture(transformers, capture):
    transformers.AttentionInterface.register(CAPTURE_NAME, capture)
    mask_interface = getattr(transformers, "AttentionMaskInterface", None)
    if mask_interface is not None:  # transformers >= 4.53 builds masks per attention implementation
        from transformers.masking_utils import sdpa_mask

        mask_interface.register(CAPTURE_NAME, sdpa_mask)


def cache_layers(past_key_values):
    """[(keys, values)] per layer, each [batch, kv_heads, tokens, head_dim], from any cache form."""
    if past_key_values is None:
        fail("the model returned no past_key_values (does it support use_cache=True?)")
    if isinstance(past_key_values, (tuple, list)):  # the legacy format: ((k, v), (k, v), ...)
        return [(layer[0], layer[1]) for layer in past_key_values]
    layers = getattr(past_key_values, "layers", None)
    if layers is not None:  # Cache with per-layer objects (transformers >= 4.56)
        return [(layer.keys, layer.values) for layer in layers]
    if hasattr(past_key_values, "to_legacy_cache"):  # DynamicCache before 4.56
        return [(k, v) for k, v in past_key_values.to_legacy_cache()]
    fail(f"unknown cache type {type(past_key_values).__name__}: expected a DynamicCache or the legacy tuple")


def to_numpy(torch, tensor):
    """A CPU numpy array (float16/32/64), or kv_dump_format.StoredAs holding the bits of a bfloat16
    or fp8 tensor (numpy has neither type), so the dump keeps the cache's own dtype."""
    import numpy as np

    tensor = tensor.detach().to("cpu").contiguous()
    if tensor.dtype == torch.bfloat16:
        return kv_dump_format.Bf16Bits(tensor.view(torch.int16).numpy().view(np.uint16))
    fp8 = {getattr(torch, "float8_e4m3fn", None): "F8_E4M3", getattr(torch, "float8_e5m2", None): "F8_E5M2"}
    if tensor.dtype in fp8:
        return kv_dump_format.StoredAs(fp8[tensor.dtype], tensor.view(torch.uint8).numpy())
    if tensor.dtype in (torch.float16, torch.float32, torch.float64):
        return tensor.numpy()
    fail(f"cannot store a {tensor.dtype} tensor (expected a float type)")


def config_value(config, *names):
    """The first of `names` the model config (or its rope_parameters) holds, else None."""
    for source in (config, getattr(config, "rope_parameters", None) or {}):
        for name in names:
            value = source.get(name) if isinstance(source, dict) else getattr(source, name, None)
            if value is not None:
                return value
    return None


def read_text(path):
    if path is None:
        return BUILT_IN_PASSAGE, "built-in passage"
    try:
        return Path(path).read_text(encoding="utf-8"), Path(path).name
    except (OSError, UnicodeDecodeError) as error:
        fail(f"cannot read the text file '{path}': {error}")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Dump post-RoPE keys, values and queries of a Hugging Face causal LM for tqlab.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Needs torch and transformers >= 4.51. See the module docstring for what is captured and how.")
    parser.add_argument("--model", required=True, help="model id on the Hub or a local directory")
    parser.add_argument("--revision", help="model revision (branch, tag or commit)")
    parser.add_argument("--text", help="UTF-8 text file to run through the model (default: a built-in passage)")
    parser.add_argument("--max-tokens", type=int, default=2048, help="keep the first N tokens (default 2048)")
    parser.add_argument("--dtype", choices=["auto", "bf16", "f16", "f32"], default="auto",
                        help="dtype to load and run the model in, and so of the dump (default: the checkpoint's)")
    parser.add_argument("--device", default="cpu",
                        help="torch device, e.g. cpu, cuda, cuda:1, mps, or auto (device_map=\"auto\", needs "
                             "accelerate) (default cpu)")
    parser.add_argument("--no-queries", action="store_true", help="write keys and values only")
    parser.add_argument("--trust-remote-code", action="store_true", help="allow the model's own code (see its card)")
    parser.add_argument("-o", "--output", default="kv_dump.safetensors", help="output file (default kv_dump.safetensors)")
    args = parser.parse_args(argv)
    if args.max_tokens < 1:
        parser.error("--max-tokens must be at least 1")
    if not args.output.endswith(".safetensors"):
        parser.error("--output must end in .safetensors")
    return args


def dump(args):
    torch, transformers = import_torch()
    capture = QueryCapture()
    if not args.no_queries:
        register_capture(transformers, capture)
    dtype = {"auto": "auto", "bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[args.dtype]
    load = {"revision": args.revision, "trust_remote_code": args.trust_remote_code}
    tokenizer = transformers.AutoTokenizer.from_pretrained(args.model, **load)
    # from_pretrained's `torch_dtype` became `dtype` in transformers 4.56.
    version = tuple(int(part) for part in transformers.__version__.split(".")[:2] if part.isdigit())
    dtype_key = "dtype" if version >= (4, 56) else "torch_dtype"
    placement = {"device_map": "auto"} if args.device == "auto" else {}  # "auto" needs the accelerate package
    model = transformers.AutoModelForCausalLM.from_pretrained(
        args.model, attn_implementation=None if args.no_queries else CAPTURE_NAME, **{dtype_key: dtype}, **placement,
        **load)
    if args.device != "auto":
        model.to(args.device)
    model.eval()

    text, text_source = read_text(args.text)
    encoded = tokenizer(text, return_tensors="pt")
    input_ids = encoded["input_ids"][:, : args.max_tokens].to(model.device)
    attention_mask = torch.ones_like(input_ids)
    tokens = input_ids.shape[1]
    with torch.no_grad():
        outputs = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=True)

    cache = cache_layers(outputs.past_key_values)
    layers = []
    for layer, (keys, values) in enumerate(cache):
        if keys is None or keys.shape[-2] != tokens:
            got = "nothing" if keys is None else f"{keys.shape[-2]} tokens"
            fail(f"layer {layer}'s cache holds {got}, expected {tokens} (a sliding-window layer? use --max-tokens "
                 "at most the window)")
        queries = None
        if not args.no_queries:
            if layer not in capture.queries:
                fail(f"no queries were captured for layer {layer}: this architecture's attention does not go "
                     f"through transformers' AttentionInterface; use --no-queries for keys and values only")
            queries = to_numpy(torch, capture.queries[layer])
        layers.append((to_numpy(torch, keys), to_numpy(torch, values), queries))

    config = model.config
    head_dim = layers[0][0].shape[-1]
    # The scale the model passed its attention function, when every layer passed the same one;
    # else (no queries captured, or per-layer scales) 1/sqrt(head dim), and the metadata says which.
    scalings = {float(value) for value in capture.scaling.values() if value is not None}
    scale = scalings.pop() if len(scalings) == 1 else None
    metadata = {
        "source": "tools/dump_kv.py",
        "model": args.model,
        "revision": args.revision or "",
        "architecture": ",".join(getattr(config, "architectures", None) or [type(model).__name__]),
        "dtype": kv_dump_format.dtype_code(layers[0][0]).lower(),
        "attention_scale": repr(scale) if scale is not None else repr(head_dim ** -0.5),
        "attention_scale_source": "model" if scale is not None else "1/sqrt(head_dim)",
        "rope_theta": json.dumps(config_value(config, "rope_theta")),
        "rope_scaling": json.dumps(config_value(config, "rope_scaling", "rope_type"), default=str),
        "text": text_source,
        "text_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    if capture.extras:  # tqlab's attention metrics attend to every earlier token of a chunk
        metadata["sliding_window_layers"] = json.dumps({str(k): v["sliding_window"] for k, v in capture.extras.items()},
                                                       default=str)
    position_ids = torch.arange(tokens, dtype=torch.int64).unsqueeze(0)
    extra_tensors = {name: tensor.to("cpu").to(torch.int64).numpy()
                     for name, tensor in (("input_ids", input_ids), ("attention_mask", attention_mask),
                                          ("position_ids", position_ids))}
    sizes = kv_dump_format.write_kv_dump(args.output, layers, extra_tensors=extra_tensors, metadata=metadata)
    first = sizes[0]
    print(f"wrote {args.output}: {len(sizes)} layers, {tokens} tokens, {first['kv_heads']} kv heads"
          f"{', ' + str(first['q_heads']) + ' q heads' if first['q_heads'] else ''}, key dim {first['key_dim']}, "
          f"value dim {first['value_dim']}, {metadata['dtype']}")


def main(argv=None):
    dump(parse_args(argv if argv is not None else sys.argv[1:]))


if __name__ == "__main__":
    main()
