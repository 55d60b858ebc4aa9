"""An independent float64 reference for `tqlab sweep`'s reconstruction and attention metrics.

Written from the metric definitions in docs/SWEEP.md, not from tqlab's code: numpy, float64
throughout, one query at a time. The quantized keys and values come from `tqlab roundtrip`
with the same specs and seed (it quantizes each (layer, sequence, head) slab in the same context
as the sweep), so what is checked here is everything the sweep does after quantization: chunks,
causal masks, grouped-query mapping, the attention scale, exact window and sink tokens in both
window modes, every mean, the 95th percentile, the cluster standard errors and the seed summaries.

  sweep_reference.py make DIR              writes DIR/dump.safetensors and DIR/sweep_*.json
  sweep_reference.py pairs DIR             prints "K V SEED OUT" for each roundtrip to run
  sweep_reference.py check DIR NAME        compares DIR/NAME.results.json with the reference
                                           computed from DIR/sweep_NAME.json (any dump, any runs
                                           with explicit k, v, window, sink)

Needs Debian's python3-numpy; imports tools/kv_dump_format.py for the safetensors writer and reader.
"""

import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import kv_dump_format  # noqa: E402 (the tools' safetensors writer and reader)

# Two layers with different head dims (layer 1: K 32, V 16, as MLA-style models have), two
# sequences, GQA 6 query heads over 2 K/V heads, 75 tokens cut into chunks of 32, 32 and 11.
LAYERS = [{"key_dim": 16, "value_dim": 16}, {"key_dim": 32, "value_dim": 16}]
BATCH, KV_HEADS, Q_HEADS, TOKENS, CHUNK = 2, 2, 6, 75, 32
SEEDS = [0, 5]
PAIRS = [("tq:b=3", "tq:b=2"), ("tq:b=2,nc", "fp8_e4m3")]

CONFIGS = {
    # causal, 1/sqrt(d), recent windows and sinks
    "causal_recent": {
        "attention": {"chunk": CHUNK, "causal": True, "scale": "1/sqrt(d)", "window_mode": "recent"},
        "runs": [(0, 0, 0), (0, 5, 0), (0, 0, 3), (1, 7, 2)],
    },
    # bidirectional, a numeric scale, tail windows
    "bidirectional_tail": {
        "attention": {"chunk": CHUNK, "causal": False, "scale": 0.3, "window_mode": "tail"},
        "runs": [(0, 0, 0), (0, 6, 0), (1, 4, 2)],
    },
    # causal tail windows, where a query may sit before its chunk's tail
    "causal_tail": {
        "attention": {"chunk": CHUNK, "causal": True, "scale": "1/sqrt(d)", "window_mode": "tail"},
        "runs": [(1, 9, 1)],
    },
}

ATTENTION_METRICS = ["attn_kl", "attn_top1", "attn_top5", "attn_cos", "attn_out_rel_err", "ip_bias", "ip_rmse"]
RECONSTRUCTION_METRICS = ["k_rel_mse", "v_rel_mse", "k_nmse", "v_nmse", "k_cos", "v_cos"]


def roundtrip_name(k_spec, v_spec, seed):
    """The file `tqlab roundtrip --k K --v V --seed SEED` writes for the check."""
    def plain(spec):
        return "".join(c if c.isalnum() else "_" for c in spec)
    return f"rt_{plain(k_spec)}__{plain(v_spec)}__s{seed}.safetensors"


def make_dump(directory):
    rng = np.random.default_rng(20261201)
    layers = []
    for shape in LAYERS:
        d, dv = shape["key_dim"], shape["value_dim"]
        # Keys with a shared per-channel offset (as real keys have), values plain Gaussian,
        # queries that point at an earlier key so that attention is peaked, as in a trained model.
        offset = rng.normal(0, 2, size=(1, KV_HEADS, 1, d))
        keys = rng.normal(0, 1, size=(BATCH, KV_HEADS, TOKENS, d)) + offset
        values = rng.normal(0, 1, size=(BATCH, KV_HEADS, TOKENS, dv))
        queries = rng.normal(0, 1, size=(BATCH, Q_HEADS, TOKENS, d))
        group = Q_HEADS // KV_HEADS
        for h in range(Q_HEADS):
            for t in range(TOKENS):
                j = rng.integers(0, t + 1)
                queries[:, h, t] += 3.0 * (keys[:, h // group, j] - offset[0, h // group, 0])
        layers.append(tuple(a.astype(np.float32) for a in (keys, values, queries)))
    kv_dump_format.write_kv_dump(str(Path(directory) / "dump.safetensors"), layers)

    for name, spec in CONFIGS.items():
        runs = [{"k": PAIRS[p][0], "v": PAIRS[p][1], "window": w, "sink": s} for p, w, s in spec["runs"]]
        config = {"name": name, "data": {"path": "dump.safetensors"}, "runs": runs,
                  "metrics": {"reconstruction": True, "attention": spec["attention"], "needle": False},
                  "seeds": SEEDS, "out": f"{name}.results.json"}
        (Path(directory) / f"sweep_{name}.json").write_text(json.dumps(config, indent=1))


def read_safetensors_floats(path):
    """name -> float64 array, for the float tensors of a file."""
    return kv_dump_format.read_safetensors(path)[0]


def exact_token_mask(query, chunk_begin, chunk_len, attended, window, sink, mode):
    """Which of the attended keys (chunk-local indices) the run keeps exact for this query."""
    positions = chunk_begin + attended           # absolute token positions
    exact = positions < sink
    if window > 0:
        if mode == "recent":
            exact |= (attended > query - window) & (attended <= query)
        else:
            exact |= attended >= chunk_len - window
    return exact


def top_k_by_index(values, k):
    """Indices of the k largest values, ties ordered by index (lower first)."""
    order = np.lexsort((np.arange(len(values)), -values))
    return order[:k]


class Sums:
    """Per-cluster sums (A_c, B_c) of one mean, clusters = (layer, K/V head)."""

    def __init__(self):
        self.by_cluster = {}

    def add(self, cluster, value, weight=1.0):
        a, b = self.by_cluster.get(cluster, (0.0, 0.0))
        self.by_cluster[cluster] = (a + value, b + weight)


def ratio(sums):
    a = sum(v[0] for v in sums.by_cluster.values())
    b = sum(v[1] for v in sums.by_cluster.values())
    return a / b


def cluster_se(per_seed_sums):
    """Cluster-robust standard error of the seed-averaged ratio of sums."""
    clusters = sorted(per_seed_sums[0].by_cluster)
    a = np.array([np.mean([s.by_cluster[c][0] for s in per_seed_sums]) for c in clusters])
    b = np.array([np.mean([s.by_cluster[c][1] for s in per_seed_sums]) for c in clusters])
    count = len(clusters)
    if count < 2:
        return None
    r = a.sum() / b.sum()
    return math.sqrt(count / (count - 1) * np.sum((a - r * b) ** 2) / b.sum() ** 2)


def reference_metrics(exact, quantized, run, attention):
    """Every reconstruction and attention metric of one run and one seed, with cluster sums."""
    sums = {name: Sums() for name in RECONSTRUCTION_METRICS + ATTENTION_METRICS}
    rel = {"k": [Sums(), Sums()], "v": [Sums(), Sums()]}  # numerator, denominator of *_rel_mse
    kl_values = []
    window, sink, mode = run["window"], run["sink"], attention["window_mode"]
    layer = 0
    while f"layers.{layer}.k" in exact:
        keys, values, queries = (exact[f"layers.{layer}.{r}"] for r in "kvq")
        keys_q, values_q = quantized[f"layers.{layer}.k"], quantized[f"layers.{layer}.v"]
        seqs, kv_heads, tokens, key_dim = keys.shape
        q_heads = queries.shape[1]
        scale = attention["scale"]
        scale = 1 / math.sqrt(key_dim) if scale == "1/sqrt(d)" else float(scale)
        for role, x, xq in (("k", keys, keys_q), ("v", values, values_q)):
            for head in range(kv_heads):
                cluster = (layer, head)
                err = np.sum((x[:, head] - xq[:, head]) ** 2, axis=-1).ravel()
                energy = np.sum(x[:, head] ** 2, axis=-1).ravel()
                rel[role][0].add(cluster, err.sum(), 0)
                rel[role][1].add(cluster, energy.sum(), 0)
                for e, n, a, b in zip(err, energy, x[:, head].reshape(-1, x.shape[-1]),
                                      xq[:, head].reshape(-1, x.shape[-1])):
                    if n == 0:
                        continue
                    sums[f"{role}_nmse"].add(cluster, e / n)
                    nb = np.linalg.norm(b)
                    sums[f"{role}_cos"].add(cluster, 0.0 if nb == 0 else a @ b / (math.sqrt(n) * nb))
        for seq in range(seqs):
            for q_head in range(q_heads):
                kv_head = q_head * kv_heads // q_heads
                cluster = (layer, kv_head)
                for chunk_begin in range(0, tokens, attention["chunk"]):
                    chunk_len = min(attention["chunk"], tokens - chunk_begin)
                    k = keys[seq, kv_head, chunk_begin:chunk_begin + chunk_len]
                    v = values[seq, kv_head, chunk_begin:chunk_begin + chunk_len]
                    kq = keys_q[seq, kv_head, chunk_begin:chunk_begin + chunk_len]
                    vq = values_q[seq, kv_head, chunk_begin:chunk_begin + chunk_len]
                    for i in range(chunk_len):
                        q = queries[seq, q_head, chunk_begin + i]
                        attended = np.arange(i + 1 if attention["causal"] else chunk_len)
                        keep = exact_token_mask(i, chunk_begin, chunk_len, attended, window, sink, mode)
                        k_run = np.where(keep[:, None], k[attended], kq[attended])
                        v_run = np.where(keep[:, None], v[attended], vq[attended])
                        logits = scale * (k[attended] @ q)
                        logits_run = scale * (k_run @ q)
                        p = np.exp(logits - logits.max())
                        p /= p.sum()
                        p_run = np.exp(logits_run - logits_run.max())
                        p_run /= p_run.sum()
                        log_p = logits - logits.max() - math.log(np.exp(logits - logits.max()).sum())
                        log_p_run = logits_run - logits_run.max() - math.log(
                            np.exp(logits_run - logits_run.max()).sum())
                        kl = float(np.sum(p * (log_p - log_p_run)))
                        kl_values.append(kl)
                        sums["attn_kl"].add(cluster, kl)
                        best = int(np.argmax(logits))
                        sums["attn_top1"].add(cluster, float(int(np.argmax(logits_run)) == best))
                        top5 = len(attended) <= 5 or best in top_k_by_index(p_run, 5)
                        sums["attn_top5"].add(cluster, float(top5))
                        sums["attn_cos"].add(cluster, p @ p_run / (np.linalg.norm(p) * np.linalg.norm(p_run)))
                        out, out_run = p @ v[attended], p_run @ v_run
                        if np.linalg.norm(out) > 0:
                            sums["attn_out_rel_err"].add(cluster,
                                                         np.linalg.norm(out_run - out) / np.linalg.norm(out))
                        delta = logits_run - logits
                        sums["ip_bias"].add(cluster, delta.mean())
                        sums["ip_rmse"].add(cluster, np.mean(delta ** 2))
        layer += 1
    for role in "kv":
        numerator, denominator = rel[role]
        merged = Sums()
        for cluster in numerator.by_cluster:
            merged.by_cluster[cluster] = (numerator.by_cluster[cluster][0], denominator.by_cluster[cluster][0])
        sums[f"{role}_rel_mse"] = merged
    return sums, np.array(kl_values)


def close(got, want, rtol, atol):
    return got is not None and abs(got - want) <= atol + rtol * abs(want)


def check(directory, name):
    """Compares DIR/NAME.results.json with the reference computed from the config
    DIR/sweep_NAME.json, the dump it names and the roundtrip files of `roundtrip_name`."""
    directory = Path(directory)
    config = json.loads((directory / f"sweep_{name}.json").read_text())
    attention = config["metrics"]["attention"]
    seeds = config["seeds"]
    results = json.loads((directory / f"{name}.results.json").read_text())
    exact = read_safetensors_floats(directory / config["data"]["path"])
    queries_total = sum(a.shape[0] * a.shape[1] * a.shape[2] for n, a in exact.items() if n.endswith(".q"))
    failures, checked = [], 0
    for run, got_run in zip(config["runs"], results["runs"]):
        label = got_run["id"]
        per_seed_sums, per_seed_p95 = [], []
        for seed in seeds:
            quantized = read_safetensors_floats(directory / roundtrip_name(run["k"], run["v"], seed))
            sums, kl_values = reference_metrics(exact, quantized, run, attention)
            per_seed_sums.append(sums)
            per_seed_p95.append(float(np.percentile(kl_values, 95)))
        for metric in RECONSTRUCTION_METRICS + ATTENTION_METRICS + ["attn_kl_p95"]:
            got = got_run["metrics"][metric]
            if metric == "attn_kl_p95":
                want_per_seed = per_seed_p95
            else:
                want_per_seed = [ratio(s[metric]) for s in per_seed_sums]
                if metric == "ip_rmse":
                    want_per_seed = [math.sqrt(w) for w in want_per_seed]
            # Shares of queries may differ by a query whose arg-max is a float32 near-tie.
            rtol, atol = (0, 1.01 / queries_total) if metric in ("attn_top1", "attn_top5") else (2e-4, 1e-9)
            for seed, got_value, want in zip(seeds, got["per_seed"], want_per_seed):
                checked += 1
                if not close(got_value, want, rtol, atol):
                    failures.append(f"{label} seed {seed} {metric}: sweep {got_value!r}, reference {want!r}")
            checked += 1
            if not close(got["mean"], float(np.mean(want_per_seed)), rtol, atol):
                failures.append(f"{label} {metric} mean: sweep {got['mean']!r}, reference {np.mean(want_per_seed)!r}")
            if len(seeds) > 1:
                checked += 1
                want_std = float(np.std(want_per_seed, ddof=1))
                if not close(got["std"], want_std, 2e-3, 1e-9 + atol):
                    failures.append(f"{label} {metric} std: sweep {got['std']!r}, reference {want_std!r}")
            if metric not in ("attn_kl_p95", "ip_rmse"):
                want_se = cluster_se([s[metric] for s in per_seed_sums])
                checked += 1
                if not close(got["se"], want_se, 2e-3, 1e-9 + atol):
                    failures.append(f"{label} {metric} se: sweep {got['se']!r}, reference {want_se!r}")
    for line in failures:
        print("MISMATCH:", line)
    print(f"{name}: {checked} values checked against the float64 reference, {len(failures)} mismatches")
    return 1 if failures else 0


def main(argv):
    command, directory = argv[1], argv[2]
    if command == "make":
        make_dump(directory)
        return 0
    if command == "pairs":
        for k, v in PAIRS:
            for seed in SEEDS:
                print(k, v, seed, roundtrip_name(k, v, seed))
        return 0
    if command == "check":
        return check(directory, argv[3])
    raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
