# tools/plot_results.py on results made here: three small sweeps overlaid, their per-layer
# figures, the K/V norm ratio from --dump, turboquant-explained's three figures from a verify-bounds file and an
# allocation's bit map and frontier.
# Every PNG exists, has its documented pixel size and is not blank; bad inputs exit 2
# with one line naming the file.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- *.safetensors *.json *.txt figs
python=/usr/bin/python3
if ! [ -x "$python" ] || ! "$python" -c 'import matplotlib, numpy' 2>/dev/null; then
  echo "SKIP: $python with matplotlib and numpy is absent (tools/install_deps.sh installs them)"
  exit 77
fi
plot="$(cd "$(dirname "$0")/../../tools" && pwd)/plot_results.py"

expect_exit 0 "synth" -- "$TQLAB" synth -o small.safetensors --layers 2 --kv-heads 2 --q-heads 4 --tokens 96 --dim 64
cat > study.json <<'JSON'
{"data": {"path": "small.safetensors"},
 "grid": {"k": ["tq:b=2", "tq:b=3", "tq:b=3,nc", "kivi:b=4"], "v": ["tq:b=3"]},
 "metrics": {"attention": {"chunk": 64}, "needle": {"trials": 8, "synth_trials": 1}},
 "out": "a.json"}
JSON
expect_exit 0 "sweep a" -- "$TQLAB" sweep --config study.json --quiet
expect_exit 0 "sweep b" -- "$TQLAB" sweep --config study.json --quiet --seed 1 --out b.json
expect_exit 0 "verify-bounds" -- "$TQLAB" verify-bounds --dims 16,32 --bits 1,2,3 --samples 400 --rotation-samples 0 \
  --json bounds.json

# a third file of 16 runs: its heatmap grows past 12 runs
"$python" -c "
import json
d = json.load(open('a.json'))
d['runs'] = [dict(r, id=f'{r[\"id\"]} #{i}') for i in range(4) for r in d['runs']]
json.dump(d, open('many.json', 'w'))"
printf '{"data": {"path": "small.safetensors"}, "metrics": {"attention": {"chunk": 64}}}' >alloc_config.json
expect_exit 0 "allocate" -- "$TQLAB" allocate --config alloc_config.json --budget tq:b=3,nc \
  --candidates tq:b=2,nc,tq:b=3,nc,tq:b=4,nc -o alloc.json --quiet
expect_exit 0 "plot" -- "$python" "$plot" a.json b.json many.json bounds.json alloc.json -o figs --dump small.safetensors
"$python" - figs <<'PY' || fail "the figures are not as documented"
import os, sys
import matplotlib.image
import numpy as np
folder = sys.argv[1]
expected = {  # name: (width, height) in pixels
    "attn_kl_vs_bits.png": (800, 500), "k_rel_mse_vs_bits.png": (800, 500),
    "bounds_ip_error-bounds.png": (1000, 750), "bounds_ip_error_by_ip-bounds.png": (1000, 750),
    "bounds_distortion-bounds.png": (800, 500),
    "allocation_bits-alloc.png": (800, 500), "allocation_frontier-alloc.png": (800, 500),
}
for stem, runs in (("a", 4), ("b", 4), ("many", 16)):
    heatmap_height = 500 if runs <= 12 else int(round((0.35 * runs + 0.8) * 100))
    expected[f"attn_kl_per_layer-{stem}.png"] = (800, heatmap_height)
    expected[f"rel_mse_per_layer-{stem}.png"] = (800, 500)
    expected[f"kv_norm_ratio-{stem}.png"] = (800, 500)
assert sorted(os.listdir(folder)) == sorted(expected), sorted(os.listdir(folder))
for name, (width, height) in expected.items():
    image = matplotlib.image.imread(os.path.join(folder, name))
    assert image.shape[:2] == (height, width), (name, image.shape)
    rgb = (image[..., :3] * 255).astype(np.uint32)
    pixels = (rgb[..., 0] << 16 | rgb[..., 1] << 8 | rgb[..., 2]).ravel()
    colours, counts = np.unique(pixels, return_counts=True)
    # Not blank: anti-aliased lines, text and fills give hundreds of colours; an empty
    # figure is one or two, and the background is never nearly everything.
    assert len(colours) > 50, (name, len(colours))
    assert counts.max() < 0.95 * len(pixels), (name, counts.max() / len(pixels))
    # Data are drawn in colour, frames and text in grey: axes with legends but no data have
    # 0.02% coloured pixels, the sparsest figure with data 0.4%.
    chroma = rgb.max(axis=2).astype(int) - rgb.min(axis=2)
    assert (chroma > 60).mean() > 0.001, (name, (chroma > 60).mean())
PY
[ "$(grep -c '\.png$' out.txt)" = 16 ] || fail "plot did not list the 16 figures it wrote: $(cat out.txt)"

# End-to-end results (the committed engines comparison: a model block, no offline metrics): e2e_kld
# against bits, every engine and prefill its own marker, and no offline figure.
repo="$(cd "$(dirname "$0")/../.." && pwd)"
expect_exit 0 "plot end-to-end results" -- "$python" "$plot" "$repo/results/engines.e2e.json" -o e2e_figs
[ "$(cat out.txt)" = "e2e_figs/e2e_kld_vs_bits.png" ] || fail "end-to-end results gave other figures: $(cat out.txt)"

# ---------------------------------------------------------------- bad input: exit 2, one line
expect_exit 0 "codebook" -- "$TQLAB" codebook export --dim 16 --bits 2 -o codebook.json
expect_exit 2 "a codebook file" -- "$python" "$plot" codebook.json -o figs
expect_error_line "codebook.json" "tqlab.codebook/1"
expect_exit 2 "a missing file" -- "$python" "$plot" none.json -o figs
expect_error_line "none.json"
echo '{"schema": ' >broken.json
expect_exit 2 "invalid JSON" -- "$python" "$plot" broken.json -o figs
expect_error_line "broken.json" "not valid JSON"
expect_exit 2 "--dump of another format" -- "$python" "$plot" a.json -o figs --dump a.json
expect_error_line "a.json" "safetensors"
expect_exit 2 "--dim not measured" -- "$python" "$plot" bounds.json -o figs --dim 64
expect_error_line "--dim 64"

finish
