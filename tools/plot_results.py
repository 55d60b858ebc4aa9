#!/usr/bin/python3
"""Figures from tqlab result files, as PNGs (matplotlib, Agg backend).

usage: plot_results.py RESULTS.json... -o DIR [--dump TENSORS] [--dim D]

Each input is a `tqlab sweep` results file (schema tqlab.sweep/1), a
`tqlab verify-bounds --json` file (tqlab.bounds/2, or /1 as tqlab before 0.2 wrote it) or a
`tqlab allocate` document (tqlab.allocation/1); the figures written are:

From sweep results (all given files overlaid, one colour and line style per file,
one marker per method -- the part of the K spec before ':'):
  attn_kl_vs_bits.png      attn_kl against bits_kv, log y, standard errors as bars,
                           each file's Pareto front drawn (a run is on it when no
                           other run of the file has fewer or equal bits and a
                           lower value: the rule `tqlab report` marks)
  k_rel_mse_vs_bits.png    k_rel_mse against bits_k (the key quantizer's own bits)
  e2e_kld_vs_bits.png      with end-to-end results (a model block): e2e_kld against bits_kv,
                           the same way; a run under another engine or prefill is its own
                           marker ("q4_0 (llama.cpp, prefill exact 64)")
(the two offline figures and the per-layer ones only from files with offline metrics)
Per sweep results file STEM:
  attn_kl_per_layer-STEM.png   heatmap of attn_kl, one row per run, one column per layer
  rel_mse_per_layer-STEM.png   k_rel_mse and v_rel_mse per layer, one line per run
  kv_norm_ratio-STEM.png       only with --dump: mean key norm / mean value norm per
                               layer, read from the tensor file (results hold no norms;
                               safetensors only; a sha256 other than the results' is
                               a warning)
Per bounds file STEM (the TurboQuant paper's inner-product error figures; --dim picks the dimension of the first two,
default 128 when measured, else the largest):
  bounds_ip_error-STEM.png        histograms of the inner-product error <y,Q(x)> - <y,x>
                                  per estimator (rows) and bit width (columns)
  bounds_ip_error_by_ip-STEM.png  the same, one curve per true inner product <y,x>
  bounds_distortion-STEM.png      D_mse and d*D_prod against bits, between their lower
                                  and upper bounds, log y, one colour per dimension

Per allocation file STEM (docs/ALLOCATE.md):
  allocation_bits-STEM.png        the bits per value of each unit's spec: one row per layer, one
                                  column per role (and kv head), the number in each cell
  allocation_frontier-STEM.png    predicted damage against budget: the allocation's optimum at
                                  every budget and each uniform spec, log y, the budget marked

Sizes (pixels, 100 dpi): the allocation figures 800x500; the vs-bits, per-layer and distortion figures 800x500;
the heatmap 800x500 up to 12 runs, then 0.35 inch taller per run; the histogram
grids 1000x750. Exit 0 when every figure was written, 2 (one line on stderr naming
the file) when an input cannot be read or is of another schema.
Needs Debian's python3-matplotlib and python3-numpy; run it with /usr/bin/python3.
"""
import argparse
import hashlib
import json
import math
import os
import sys

# matplotlib and numpy take a second to import: they are imported (import_plotting) only
# once the inputs have been read and checked, so that a bad input fails at once.
plt = np = LogNorm = Line2D = read_float_tensors = None

# verify-bounds documents: schema 2 renamed schema 1's seed001 fields (the plots read neither).
BOUNDS_SCHEMAS = ("tqlab.bounds/2", "tqlab.bounds/1")
ALLOCATION_SCHEMA = "tqlab.allocation/1"
DPI = 100
WIDE = (8, 5)
GRID = (10, 7.5)
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p"]
LINESTYLES = ["-", "--", ":", "-."]
ESTIMATORS = ["biased", "debiased", "prod"]


class InputError(Exception):
    pass


def import_plotting():
    global plt, np, LogNorm, Line2D, read_float_tensors
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import LogNorm
    from matplotlib.lines import Line2D

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from kv_dump_format import read_safetensors  # the tools' one safetensors reader (numpy)

    def read_float_tensors(path):
        return read_safetensors(path)[0]


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except OSError as error:
        raise InputError(f"'{path}': cannot be read ({error.strerror})")
    except ValueError as error:
        raise InputError(f"'{path}': not valid JSON: {error}")
    if not isinstance(document, dict) or document.get("schema") not in ("tqlab.sweep/1", ALLOCATION_SCHEMA,
                                                                          *BOUNDS_SCHEMAS):
        schema = document.get("schema") if isinstance(document, dict) else None
        raise InputError(f"'{path}': schema {schema!r}, expected tqlab.sweep/1, tqlab.bounds/2 or "
                         f"{ALLOCATION_SCHEMA}")
    return document


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def method(run):
    """The K spec's method, with the run's engine and prefill when not the defaults ("q4_0 (llama.cpp)")."""
    k = run["k"] if isinstance(run["k"], str) else run["k"].get("default", "per-layer")
    return k.split(":")[0] + run_context(run)


def run_context(run):
    """" (llama.cpp, prefill exact 64)": the run's engine and prefill when not the defaults."""
    parts = [run["engine"]] if run.get("engine", "tqlab") != "tqlab" else []
    if run.get("prefill", "quantized") != "quantized":
        parts.append(f"prefill {run['prefill']}")
    return f" ({', '.join(parts)})" if parts else ""


def value(run, name):
    """A run's bits entry or metric mean; None when absent or null."""
    if name in run.get("bits", {}):
        return run["bits"][name]
    metric = run.get("metrics", {}).get(name)
    return metric.get("mean") if isinstance(metric, dict) else None


def standard_error(run, name):
    metric = run.get("metrics", {}).get(name)
    return metric.get("se") if isinstance(metric, dict) else None


def pareto_front(points):
    """Points (bits, value) no other point beats with fewer-or-equal bits and a lower value."""
    front = [p for p in points if not any(q[0] <= p[0] and q[1] < p[1] for q in points)]
    return sorted(front)


def save(figure, directory, name, written):
    path = os.path.join(directory, name)
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    written.append(path)


def plot_vs_bits(sweeps, metric, bits_name, directory, written):
    methods = []
    for _, document in sweeps:
        for run in document["runs"]:
            if method(run) not in methods:
                methods.append(method(run))
    figure, axes = plt.subplots(figsize=WIDE)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    plotted = 0
    for index, (path, document) in enumerate(sweeps):
        colour, style = colours[index % len(colours)], LINESTYLES[index % len(LINESTYLES)]
        points = []
        for run in document["runs"]:
            x, y = value(run, bits_name), value(run, metric)
            if x is None or y is None or y <= 0:
                continue  # not measured, or not drawable on a log axis
            points.append((x, y))
            se = standard_error(run, metric)
            axes.errorbar(x, y, yerr=se if se else None, marker=MARKERS[methods.index(method(run)) % len(MARKERS)],
                          color=colour, markersize=7, linestyle="none", capsize=3)
            if len(sweeps) == 1:
                label = run["k"] if isinstance(run["k"], str) else "per-layer"
                label += run_context(run)
                axes.annotate(label, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=7)
            plotted += 1
        front = pareto_front(points)
        if front:
            axes.plot([p[0] for p in front], [p[1] for p in front], color=colour, linestyle=style, alpha=0.6)
    if plotted:
        axes.set_yscale("log")
    axes.set_xlabel(f"{bits_name} (bits per value)")
    axes.set_ylabel(f"{metric} (log scale)")
    axes.set_title(f"{metric} vs {bits_name}; lines: Pareto front")
    axes.grid(True, which="both", alpha=0.3)
    method_handles = [Line2D([], [], color="black", marker=MARKERS[i % len(MARKERS)], linestyle="none", label=name)
                      for i, name in enumerate(methods)]
    file_handles = [Line2D([], [], color=colours[i % len(colours)], linestyle=LINESTYLES[i % len(LINESTYLES)],
                           label=stem(path)) for i, (path, _) in enumerate(sweeps)]
    legend = axes.legend(handles=method_handles, title="method (K)", loc="upper right", fontsize=8)
    axes.add_artist(legend)
    axes.legend(handles=file_handles, title="file", loc="lower left", fontsize=8)
    figure.tight_layout()
    save(figure, directory, f"{metric}_vs_bits.png", written)


def run_label(run):
    k = run["k"] if isinstance(run["k"], str) else "per-layer"
    v = run["v"] if isinstance(run["v"], str) else "per-layer"
    extra = "".join(f" {key}={run[key]}" for key in ("window", "sink") if run.get(key))
    return f"{k} / {v}{extra}"


def layer_table(run, name):
    values = run.get("per_layer", {}).get(name) or []
    return [np.nan if x is None else x for x in values]


def plot_layer_heatmap(path, document, directory, written):
    runs = document["runs"]
    layers = runs[0].get("per_layer", {}).get("layer", []) if runs else []
    table = np.array([layer_table(run, "attn_kl") for run in runs], dtype=float)
    height = WIDE[1] if len(runs) <= 12 else 0.35 * len(runs) + 0.8
    figure, axes = plt.subplots(figsize=(WIDE[0], height))
    positive = table[np.isfinite(table) & (table > 0)] if table.size else np.array([])
    if positive.size:
        image = axes.imshow(np.where(table > 0, table, np.nan), aspect="auto", cmap="viridis",
                            norm=LogNorm(vmin=positive.min(), vmax=positive.max()))
        figure.colorbar(image, ax=axes, label="attn_kl (nats, log scale)")
    else:
        axes.text(0.5, 0.5, "no attn_kl in this file (no queries?)", ha="center", va="center",
                  transform=axes.transAxes)
    axes.set_yticks(range(len(runs)), [run_label(run) for run in runs], fontsize=7)
    axes.set_xticks(range(len(layers)), [str(layer) for layer in layers])
    axes.set_xlabel("layer")
    axes.set_title(f"attn_kl per layer: {stem(path)}")
    figure.tight_layout()
    save(figure, directory, f"attn_kl_per_layer-{stem(path)}.png", written)


def plot_layer_mse(path, document, directory, written):
    runs = document["runs"]
    figure, (k_axes, v_axes) = plt.subplots(1, 2, figsize=WIDE, sharey=True)
    for index, run in enumerate(runs):
        layers = run.get("per_layer", {}).get("layer", [])
        style = LINESTYLES[(index // 10) % len(LINESTYLES)]
        for axes, name in ((k_axes, "k_rel_mse"), (v_axes, "v_rel_mse")):
            axes.plot(layers, layer_table(run, name), marker=MARKERS[index % len(MARKERS)], linestyle=style,
                      markersize=4, label=run_label(run))
    layers = runs[0].get("per_layer", {}).get("layer", []) if runs else []
    for axes, name in ((k_axes, "k_rel_mse"), (v_axes, "v_rel_mse")):
        axes.set_yscale("log")
        axes.set_xticks(layers)
        axes.set_xlabel("layer")
        axes.set_title(name)
        axes.grid(True, which="both", alpha=0.3)
    k_axes.set_ylabel("relative MSE (log scale)")
    v_axes.legend(fontsize=6, loc="best")
    figure.suptitle(f"K and V reconstruction error per layer: {stem(path)}")
    figure.tight_layout()
    save(figure, directory, f"rel_mse_per_layer-{stem(path)}.png", written)


# ------------------------------------------------------------------ --dump: norms from a safetensors file


def mean_norm(array, dim_axis):
    return float(np.mean(np.linalg.norm(array.astype(np.float64), axis=dim_axis)))


def plot_norm_ratio(path, document, dump, directory, written):
    try:
        with open(dump, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        tensors = read_float_tensors(dump)
    except (OSError, ValueError, KeyError) as error:
        raise InputError(f"'{dump}': cannot be read as safetensors ({error})")
    if digest != document.get("data", {}).get("sha256"):
        print(f"plot_results.py: warning: '{dump}' is not the file '{path}' was measured on (sha256 differs)",
              file=sys.stderr)
    data = document["config"]["data"]
    dim_axis = data["layout"].split().index("dim")
    layers, ratios = [], []
    for layer in data["layers"]:
        keys, values = data["keys"].format(layer=layer), data["values"].format(layer=layer)
        if keys not in tensors or values not in tensors:
            raise InputError(f"'{dump}': no tensors '{keys}' and '{values}' (names from '{path}')")
        layers.append(layer)
        ratios.append(mean_norm(tensors[keys], dim_axis) / mean_norm(tensors[values], dim_axis))
    figure, axes = plt.subplots(figsize=WIDE)
    axes.bar([str(layer) for layer in layers], ratios, color="tab:blue")
    axes.set_xlabel("layer")
    axes.set_ylabel("mean |k| / mean |v|")
    axes.set_title(f"key / value norm ratio per layer: {os.path.basename(dump)}")
    axes.grid(True, axis="y", alpha=0.3)
    figure.tight_layout()
    save(figure, directory, f"kv_norm_ratio-{stem(path)}.png", written)


# ------------------------------------------------------------------ verify-bounds figures
def chosen_dim(path, document, wanted):
    dims = sorted({row["dim"] for row in document["rows"]})
    if not dims:
        raise InputError(f"'{path}': no rows")
    if wanted is not None:
        if wanted not in dims:
            raise InputError(f"'{path}': --dim {wanted} was not measured (dims: {', '.join(map(str, dims))})")
        return wanted
    return 128 if 128 in dims else dims[-1]


def histogram_grid(path, document, dim, by_inner_product, directory, written):
    entries = [h for h in document.get("histograms", []) if h["dim"] == dim]
    bits = sorted({h["bits"] for h in entries})
    if not entries:
        raise InputError(f"'{path}': no histograms at dim {dim}")
    figure, grid = plt.subplots(len(ESTIMATORS), len(bits), figsize=GRID, squeeze=False, sharey="row")
    for row, estimator in enumerate(ESTIMATORS):
        for column, b in enumerate(bits):
            axes = grid[row][column]
            match = [h for h in entries if h["estimator"] == estimator and h["bits"] == b]
            if not match:
                axes.set_axis_off()
                continue
            h = match[0]
            edges = np.linspace(h["lo"], h["hi"], h["bins"] + 1)
            centres = (edges[:-1] + edges[1:]) / 2
            if by_inner_product:
                for group in h["by_inner_product"]:
                    counts = np.array(group["counts"], dtype=float)
                    total = counts.sum() + group["below"] + group["above"]
                    axes.plot(centres, counts / max(total, 1), drawstyle="steps-mid",
                              label=f"<y,x> = {group['inner_product']:g}")
            else:
                counts = np.array(h["overall"]["counts"], dtype=float)
                total = counts.sum() + h["overall"]["below"] + h["overall"]["above"]
                axes.bar(centres, counts / max(total, 1), width=edges[1] - edges[0], color="tab:blue")
            axes.axvline(0, color="black", linewidth=0.6)
            axes.tick_params(labelsize=7)
            if row == 0:
                axes.set_title(f"b = {b}", fontsize=9)
            if column == 0:
                axes.set_ylabel(f"{estimator}\nshare", fontsize=9)
            if row == len(ESTIMATORS) - 1:
                axes.set_xlabel("<y,x~> - <y,x>", fontsize=8)
    if by_inner_product:
        grid[0][-1].legend(fontsize=7)
    figure.suptitle(f"inner-product error, d = {dim}{', by true <y,x>' if by_inner_product else ''}: {stem(path)}")
    figure.tight_layout()
    name = "bounds_ip_error_by_ip" if by_inner_product else "bounds_ip_error"
    save(figure, directory, f"{name}-{stem(path)}.png", written)


def plot_distortion(path, document, directory, written):
    figure, (mse_axes, prod_axes) = plt.subplots(1, 2, figsize=WIDE)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    dims = sorted({row["dim"] for row in document["rows"]})
    for index, dim in enumerate(dims):
        rows = sorted((row for row in document["rows"] if row["dim"] == dim), key=lambda row: row["bits"])
        bits = [row["bits"] for row in rows]
        colour = colours[index % len(colours)]
        mse_axes.plot(bits, [row["d_mse_theory"] for row in rows], color=colour, label=f"d = {dim} theory")
        mse_axes.errorbar(bits, [row["d_mse_empirical"]["mean"] for row in rows],
                          yerr=[row["d_mse_empirical"]["standard_error"] for row in rows], color=colour,
                          marker="o", linestyle="none", capsize=3)
        prod_axes.plot(bits, [row["theorem2"]["formula"] for row in rows], color=colour, label=f"d = {dim} formula")
        for cell_index, _ in enumerate(rows[0].get("inner_products", [])):
            prod_axes.errorbar(bits, [row["inner_products"][cell_index]["prod"]["scaled_mse"]["mean"] for row in rows],
                               yerr=[row["inner_products"][cell_index]["prod"]["scaled_mse"]["standard_error"]
                                     for row in rows],
                               color=colour, marker=MARKERS[cell_index % len(MARKERS)], linestyle="none", capsize=3,
                               markersize=4)
    all_rows = sorted(document["rows"], key=lambda row: row["bits"])
    bits = sorted({row["bits"] for row in all_rows})
    first = {b: next(row for row in all_rows if row["bits"] == b) for b in bits}
    mse_axes.plot(bits, [first[b]["theorem1"]["lower_bound"] for b in bits], "k--", label="lower 4^-b")
    mse_axes.plot(bits, [first[b]["theorem1"]["upper_bound"] for b in bits], "k:", label="upper (sqrt3 pi/2) 4^-b")
    prod_axes.plot(bits, [first[b]["theorem2"]["lower_bound"] for b in bits], "k--", label="lower 4^-b")
    prod_axes.plot(bits, [first[b]["theorem2"]["upper_bound"] for b in bits], "k:", label="upper sqrt3 pi^2 4^-b")
    for axes, title, label in ((mse_axes, "D_mse (Theorem 1)", "E|x - Q(x)|^2, unit x"),
                               (prod_axes, "d * D_prod (Theorem 2); markers: each <y,x>",
                                "d * E[(<y,x~> - <y,x>)^2]")):
        axes.set_yscale("log")
        axes.set_xlabel("bits b")
        axes.set_ylabel(label)
        axes.set_title(title, fontsize=9)
        axes.set_xticks(bits)
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=6)
    figure.suptitle(f"distortion vs bits between the bounds: {stem(path)}")
    figure.tight_layout()
    save(figure, directory, f"bounds_distortion-{stem(path)}.png", written)


def plot_allocation_bits(path, document, directory, written):
    units = document["allocation"]["units"]
    layers = sorted({unit["layer"] for unit in document["profile"]["units"]})
    columns = []  # (role, head): keys' columns first
    for unit in document["profile"]["units"]:
        column = (unit["role"], unit["head"])
        if column not in columns:
            columns.append(column)
    columns.sort(key=lambda column: (column[0] != "key", -1 if column[1] is None else column[1]))
    grid = np.full((len(layers), len(columns)), np.nan)
    for unit, chosen in zip(document["profile"]["units"], units):
        grid[layers.index(unit["layer"]), columns.index((unit["role"], unit["head"]))] = chosen["bits"]
    figure, axes = plt.subplots(figsize=WIDE)
    image = axes.imshow(grid, aspect="auto", cmap="viridis")
    for row in range(len(layers)):
        for column in range(len(columns)):
            axes.text(column, row, f"{grid[row, column]:.2f}", ha="center", va="center", color="white", fontsize=8)
    axes.set_xticks(range(len(columns)))
    axes.set_xticklabels([("K" if role == "key" else "V") + ("" if head is None else f".h{head}")
                          for role, head in columns])
    axes.set_yticks(range(len(layers)))
    axes.set_yticklabels([str(layer) for layer in layers])
    axes.set_ylabel("layer")
    figure.colorbar(image, ax=axes, label="bits per value")
    budget = document["budget"]
    axes.set_title(f"{stem(path)}: {document['objective']['profile']} profile, budget {budget['bits']:.4g} bits "
                   f"({budget['given']})")
    figure.tight_layout()
    save(figure, directory, f"allocation_bits-{stem(path)}.png", written)


def plot_allocation_frontier(path, document, directory, written):
    figure, axes = plt.subplots(figsize=WIDE)
    frontier = [point for point in document["frontier"] if point["damage"] > 0]
    axes.plot([p["bits"] for p in frontier], [p["damage"] for p in frontier], "-", label="allocation (optimum)")
    uniform = [u for u in document["uniform"] if u["damage"] > 0]
    axes.plot([u["bits"] for u in uniform], [u["damage"] for u in uniform], "s",
              label="uniform (each spec at its bits)")
    for u in uniform:
        axes.annotate(u["spec"], (u["bits"], u["damage"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    for compared in document["compared"]:
        if compared["name"] == "boundary" and compared["damage"] > 0:
            axes.plot([compared["bits"]], [compared["damage"]], "^", label="boundary")
    axes.axvline(document["budget"]["bits"], color="grey", linewidth=0.8, linestyle=":")
    axes.set_yscale("log")
    axes.set_xlabel("bits per value (budget)")
    axes.set_ylabel(f"predicted damage ({document['objective']['damage']})")
    axes.set_title(f"{stem(path)}: predicted damage against budget")
    axes.legend()
    figure.tight_layout()
    save(figure, directory, f"allocation_frontier-{stem(path)}.png", written)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("inputs", nargs="+", metavar="RESULTS.json")
    parser.add_argument("-o", "--out", required=True, metavar="DIR", help="folder for the PNGs (made if absent)")
    parser.add_argument("--dump", metavar="TENSORS", help="the .safetensors file the sweep read: adds kv_norm_ratio")
    parser.add_argument("--dim", type=int, help="dimension for the bounds histograms (default 128 or the largest)")
    args = parser.parse_args()
    written = []
    try:
        documents = [(path, load(path)) for path in args.inputs]
        if args.dump and not args.dump.endswith(".safetensors"):
            raise InputError(f"'{args.dump}': --dump reads .safetensors files only")
        dims = {path: chosen_dim(path, d, args.dim) for path, d in documents if d["schema"] in BOUNDS_SCHEMAS}
        import_plotting()
        os.makedirs(args.out, exist_ok=True)
        sweeps = [(path, d) for path, d in documents if d["schema"] == "tqlab.sweep/1"]
        offline = [(path, d) for path, d in sweeps if any("attn_kl" in run["metrics"] for run in d["runs"])]
        end_to_end = [(path, d) for path, d in sweeps if "e2e" in d]
        if offline:
            plot_vs_bits(offline, "attn_kl", "bits_kv", args.out, written)
            plot_vs_bits(offline, "k_rel_mse", "bits_k", args.out, written)
        if end_to_end:
            plot_vs_bits(end_to_end, "e2e_kld", "bits_kv", args.out, written)
        if sweeps:
            for path, document in offline:
                plot_layer_heatmap(path, document, args.out, written)
                plot_layer_mse(path, document, args.out, written)
                if args.dump:
                    plot_norm_ratio(path, document, args.dump, args.out, written)
        for path, document in documents:
            if document["schema"] == ALLOCATION_SCHEMA:
                plot_allocation_bits(path, document, args.out, written)
                plot_allocation_frontier(path, document, args.out, written)
        for path, document in documents:
            if document["schema"] not in BOUNDS_SCHEMAS:
                continue
            dim = dims[path]
            histogram_grid(path, document, dim, False, args.out, written)
            histogram_grid(path, document, dim, True, args.out, written)
            plot_distortion(path, document, args.out, written)
    except InputError as error:
        print(f"plot_results.py: {error}", file=sys.stderr)
        return 2
    except (KeyError, IndexError, TypeError) as error:
        print(f"plot_results.py: an input lacks what its schema promises ({type(error).__name__}: {error})",
              file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
