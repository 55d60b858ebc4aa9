#!/usr/bin/python3
"""The end-to-end tables of docs/FINDINGS.md, computed from the committed results/*.e2e.json.

Each configs/e2e/NAME.json is a sweep with a "model" block and no "data": every run carries the
offline metrics measured on the model's own Q/K/V and the end-to-end metrics of the same run
(docs/SWEEP.md#model). This prints, as Markdown:
  - per claim (one results file each), every run's perplexity change and KL divergence, as the mean
    over seeds +/- the standard deviation over seeds, with llama.cpp's standard error of the
    seed-averaged run, beside the attention-level numbers of the same run;
  - over the distinct runs of all files, the Spearman rank correlation of each offline metric with
    e2e_ppl_delta_pct: how well the metric orders the runs by end-to-end damage;
  - the pairs of K/V-asymmetric runs that each offline metric orders the wrong way round.
Usage: tools/e2e_findings.py [RESULTS.e2e.json ...]   (default: results/*.e2e.json)
Only Debian's python3 and numpy.
"""
import glob
import json
import os
import sys

import numpy as np

# Claims in the order docs/FINDINGS.md discusses them: results file stem -> title.
CLAIMS = [
    ("bits", "Three bits are not free"),
    ("norm_correction", "Norm correction"),
    ("qjl", "QJL at 2, 3 and 4 bits"),
    ("block32", "Block 32"),
    ("kv_asymmetry", "Keys matter more than values; k8v4"),
    ("window_recent", "Residual window, recent"),
    ("window_tail", "Residual window, tail"),
]

# Offline metrics ranked against the perplexity change; +1: larger is worse, -1: larger is better.
OFFLINE = [
    ("k_rel_mse", 1), ("v_rel_mse", 1), ("k_nmse", 1), ("v_nmse", 1), ("k_cos", -1), ("v_cos", -1),
    ("attn_kl", 1), ("attn_kl_p95", 1), ("attn_top1", -1), ("attn_top5", -1), ("attn_cos", -1),
    ("attn_out_rel_err", 1), ("ip_rmse", 1), ("abs(ip_bias)", 1), ("needle_top1@1", -1),
    ("needle_synth_weight", -1),
]
DERIVED = [("k_rel_mse + v_rel_mse", 1)]
END_TO_END = [("e2e_kld", 1), ("e2e_top1", -1), ("e2e_dp_rms", 1)]


def load(paths):
    docs = {}
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        if "e2e" not in doc:
            sys.exit(f"e2e_findings.py: {path} has no end-to-end metrics (no model block)")
        docs[os.path.basename(path)[: -len(".e2e.json")]] = doc
    # Pooling runs across files is only fair when all were measured on the same tokens.
    keys = {(d["model"]["config_sha256"], d["tokens"]["sha256"], d["e2e"]["ctx"], d["e2e"]["chunks"],
             d["e2e"]["score"], d["e2e"]["bos"], tuple(d["config"]["seeds"])) for d in docs.values()}
    if len(keys) != 1:
        sys.exit("e2e_findings.py: the files were not made on the same model, tokens and settings")
    return docs


def value(run, name):
    """Seed mean of a metric (abs(ip_bias) and the derived sum included)."""
    m = run["metrics"]
    if name == "abs(ip_bias)":
        return abs(m["ip_bias"]["mean"])
    if name == "k_rel_mse + v_rel_mse":
        return m["k_rel_mse"]["mean"] + m["v_rel_mse"]["mean"]
    return m[name]["mean"]


def window_mode(doc):
    return doc["config"]["metrics"]["attention"]["window_mode"]


def label(run, doc):
    k, v = run["k"], run["v"]
    text = f"`{k}`" if k == v else f"`{k}` / `{v}`"
    if run["window"]:
        text += f", window {run['window']} {window_mode(doc)}"
    if run["sink"]:
        text += f", sink {run['sink']}"
    return text


def num(x):
    """Three significant digits; scientific below 1e-3."""
    if x == 0:
        return "0"
    return f"{x:.1e}" if abs(x) < 1e-3 else f"{x:.3g}"


def two(x):
    """Two significant digits, for a spread."""
    if x is None:
        return "–"
    return "0" if x == 0 else f"{x:.2g}"


def spread(metric, fmt):
    """mean ± std over seeds (se), the std and se as the file records them."""
    return f"{fmt(metric['mean'])} ± {two(metric['std'])} ({two(metric['se'])})"


def claim_table(doc):
    rows = ["| K / V | bits | ΔPPL % ± seed std (se) | KLD ± seed std (se) | e2e top1 "
            "| attn_kl | attn_top1 | attn_out | k_rel_mse | v_rel_mse |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for run in doc["runs"]:
        m = run["metrics"]
        bits = run["bits"]["bits_kv_effective"] if run["window"] or run["sink"] else run["bits"]["bits_kv"]
        rows.append("| " + " | ".join([
            label(run, doc),
            f"{bits:.2f}",
            spread(m["e2e_ppl_delta_pct"], lambda x: f"{x:+.2f}"),
            spread(m["e2e_kld"], num),
            f"{m['e2e_top1']['mean']:.3f}",
            num(m["attn_kl"]["mean"]),
            f"{m['attn_top1']['mean']:.3f}",
            f"{m['attn_out_rel_err']['mean']:.3f}",
            num(m["k_rel_mse"]["mean"]),
            num(m["v_rel_mse"]["mean"]),
        ]) + " |")
    return "\n".join(rows)


def fingerprint(run):
    """What the cache did, per seed: two runs with the same values are the same code."""
    m = run["metrics"]
    return tuple(tuple(m[name]["per_seed"]) for name in ("e2e_ppl_delta_pct", "e2e_kld", "attn_kl"))


def distinct_runs(docs):
    """Every run once: the same K, V, window (with its mode), sink measured in several files must agree.
    Runs with other specs that are the same code (tq:b=B,qjl=prod and tq:b=B-1,qjl=extra: B-1 codebook
    bits plus the sketch) measure identically per seed; they count once, so that the rank correlations
    do not count one point twice. Returns the runs and the aliases dropped."""
    runs, seen, aliases = {}, {}, []
    for name, doc in docs.items():
        for run in doc["runs"]:
            key = (run["k"], run["v"], run["window"], window_mode(doc) if run["window"] else "", run["sink"])
            if key in runs:
                a = runs[key][0]["metrics"]["e2e_ppl_delta_pct"]["per_seed"]
                b = run["metrics"]["e2e_ppl_delta_pct"]["per_seed"]
                if a != b:
                    sys.exit(f"e2e_findings.py: {key} differs between files: {a} vs {b}")
                continue
            fp = fingerprint(run)
            if fp in seen:
                aliases.append((label(run, doc), label(*seen[fp])))
                runs[key] = seen[fp]
                continue
            seen[fp] = (run, doc)
            runs[key] = (run, doc)
    unique = []
    for r in runs.values():
        if all(r[0] is not u[0] for u in unique):
            unique.append(r)
    return unique, aliases


def ranks(x):
    """Ranks 1..n, ties given their mean rank."""
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="mergesort")
    r = np.empty(len(x))
    r[order] = np.arange(1, len(x) + 1)
    for v in np.unique(x):
        tie = x == v
        r[tie] = r[tie].mean()
    return r


def spearman(x, y):
    rx, ry = ranks(x), ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float((rx * ry).sum() / np.sqrt((rx * rx).sum() * (ry * ry).sum()))


def spearman_table(runs):
    def subset(pred):
        return [r for r in runs if pred(r)]
    groups = [
        ("all runs", runs),
        ("no window", subset(lambda r: r[0]["window"] == 0 and r[0]["sink"] == 0)),
        ("K ≠ V", subset(lambda r: r[0]["k"] != r[0]["v"] and r[0]["window"] == 0)),
    ]
    head = "| metric | " + " | ".join(f"ρ, {g} (n = {len(rs)})" for g, rs in groups) + " |"
    rows = [head, "|---|" + "---:|" * len(groups)]
    for section, metrics in (("", OFFLINE), ("", DERIVED), ("end to end: ", END_TO_END)):
        for name, sign in metrics:
            cells = []
            for _, rs in groups:
                y = [r[0]["metrics"]["e2e_ppl_delta_pct"]["mean"] for r in rs]
                x = [sign * value(r[0], name) for r in rs]
                cells.append(f"{spearman(x, y):+.2f}" if len(rs) >= 3 else "—")
            rows.append(f"| {section}`{name}` | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def misranked_pairs(runs):
    """Pairs of no-window runs with K ≠ V in at least one of them, ordered one way by the perplexity
    change (the difference beyond 2 standard errors of the seed means) and the other way by a metric."""
    rs = [r for r in runs if r[0]["window"] == 0 and r[0]["sink"] == 0]
    rows = ["| offline metric | pairs ordered wrong / pairs | examples (the run the metric calls worse first) |",
            "|---|---:|---|"]
    for name, sign in OFFLINE + DERIVED:
        wrong, total, examples = 0, 0, []
        for i, (a, da) in enumerate(rs):
            for b, db in rs[i + 1:]:
                if a["k"] == a["v"] and b["k"] == b["v"]:
                    continue
                pa, pb = a["metrics"]["e2e_ppl_delta_pct"], b["metrics"]["e2e_ppl_delta_pct"]
                sd = np.hypot(pa["std"], pb["std"]) / np.sqrt(len(pa["per_seed"]))
                if abs(pa["mean"] - pb["mean"]) <= 2 * sd:
                    continue
                total += 1
                ma, mb = sign * value(a, name), sign * value(b, name)
                if (ma - mb) * (pa["mean"] - pb["mean"]) < 0:
                    wrong += 1
                    worse, better = (a, b) if ma > mb else (b, a)
                    examples.append((abs(pa["mean"] - pb["mean"]),
                                     f"{label(worse, da)} vs {label(better, db)}"))
        examples.sort(reverse=True)
        rows.append(f"| `{name}` | {wrong} / {total} | " + "; ".join(e for _, e in examples[:2]) + " |")
    return "\n".join(rows)


def main():
    paths = sys.argv[1:] or sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "results", "*.e2e.json")))
    if not paths:
        sys.exit("e2e_findings.py: no results/*.e2e.json (tools/make_results.sh makes them)")
    docs = load(paths)
    any_doc = next(iter(docs.values()))
    e2e, tokens = any_doc["e2e"], any_doc["tokens"]
    print("# End-to-end tables (tools/e2e_findings.py)\n")
    model = os.path.basename(os.path.normpath(any_doc["model"]["path"]))
    print(f"Model `{model}` ({any_doc['model']['architecture']}), text "
          f"`{tokens.get('path')}` ({tokens['count']} tokens, sha256 {tokens['sha256'][:16]}…), "
          f"{e2e['chunks']} chunks of {e2e['ctx']}, {e2e['score']} scoring: {e2e['scored_tokens']} "
          f"scored tokens; base PPL {e2e['base']['ppl']:.4f} ± {e2e['base']['ppl_se']:.4f}. "
          f"Seeds {any_doc['config']['seeds']}. ΔPPL and KLD: mean over seeds ± std over seeds "
          f"(llama.cpp's standard error of the seed-averaged run). Attention-level metrics: seed means, "
          f"on the model's own Q/K/V of the same chunks.\n")
    for stem, title in CLAIMS:
        if stem in docs:
            print(f"## {title} (`{stem}`)\n")
            print(claim_table(docs[stem]) + "\n")
    for stem in docs:
        if stem not in dict(CLAIMS):
            print(f"## `{stem}`\n\n" + claim_table(docs[stem]) + "\n")
    runs, aliases = distinct_runs(docs)
    print("## How well each offline metric ranks the runs by ΔPPL\n")
    print("Spearman rank correlation of the metric's seed mean with the seed mean of "
          "`e2e_ppl_delta_pct` over the distinct runs of all files, oriented so that +1 orders the "
          "runs exactly as their perplexity damage (metrics where larger is better are negated). "
          "Reconstruction metrics ignore windows (the quantizer's own error)."
          + (" Counted once as the same code: " + "; ".join(f"{a} (= {b})" for a, b in aliases) + "."
             if aliases else "") + "\n")
    print(spearman_table(runs) + "\n")
    print("## Pairs of runs with K ≠ V ordered the wrong way\n")
    print("Over pairs of runs without a window, at least one with K ≠ V, whose ΔPPL differ by more than "
          "twice the standard error of the difference of their seed means.\n")
    print(misranked_pairs(runs))


if __name__ == "__main__":
    main()
