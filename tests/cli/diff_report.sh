# tqlab diff and tqlab report through the real binary: exit 0 for a file against itself
# (every committed results/*.json but the allocation documents included, and each reported), 1 for changed
# metrics, runs, config or data (the sha256 said loudly), within-SE changes marked and counted unless
# --ignore-within-se, --metric, --rtol, --json that parses, bounds and codebook files matched by dim/bits;
# report's Markdown and CSV; every bad input exit 2 with one line naming the file.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- *.safetensors *.json *.txt *.md *.csv
python=/usr/bin/python3
[ -x "$python" ] || { echo "SKIP: $python is absent (the checks edit JSON with it)"; exit 77; }
root="$(cd "$(dirname "$0")/../.." && pwd)"

expect_exit 0 "synth" -- "$TQLAB" synth -o small.safetensors --layers 2 --kv-heads 2 --q-heads 4 --tokens 96 --dim 64
cat > config.json <<'JSON'
{"name": "cli-diff", "data": {"path": "small.safetensors"},
 "grid": {"k": ["tq:b=2", "tq:b=3", "tq:b=3,nc"], "v": ["tq:b=3"]},
 "runs": [{"k": "q4_0", "v": "q4_0", "window": 16}],
 "metrics": {"attention": {"chunk": 64}, "needle": {"trials": 16, "synth_trials": 2}},
 "seeds": [0, 1], "out": "a.json"}
JSON
expect_exit 0 "sweep" -- "$TQLAB" sweep --config config.json --threads 2 --quiet

# ---------------------------------------------------------------- diff: the same file, edits of it
expect_exit 0 "a file against itself" -- "$TQLAB" diff a.json a.json
expect_contains out.txt "4 runs in both: 4 same" "no difference"
# edit NAME PYTHON: b = a.json edited by PYTHON (on dict d, runs in r) into NAME.json.
edit() {
  "$python" -c "import json; d = json.load(open('a.json')); r = {x['k']: x for x in d['runs']}; $2; json.dump(d, open('$1.json', 'w'), indent=1)"
}
edit moved "r['tq:b=3']['metrics']['attn_kl']['mean'] *= 1.5"
expect_exit 1 "attn_kl moved by 50%" -- "$TQLAB" diff a.json moved.json
expect_contains out.txt "run k=tq:b=3 v=tq:b=3 window=0 sink=0 seeds=0,1" "attn_kl" "+50%" "the files differ"
grep -q "k_rel_mse" out.txt && fail "unchanged k_rel_mse is listed: $(cat out.txt)"
expect_exit 0 "--metric k_rel_mse leaves attn_kl out" -- "$TQLAB" diff a.json moved.json --metric k_rel_mse
expect_exit 1 "--metric is repeatable" -- "$TQLAB" diff a.json moved.json --metric attn_kl --metric k_rel_mse
expect_exit 1 "--metric before the files" -- "$TQLAB" diff --metric attn_kl a.json moved.json
expect_exit 0 "--rtol 0.5 forgives 50%" -- "$TQLAB" diff a.json moved.json --rtol 0.5
expect_exit 1 "--json" -- "$TQLAB" diff a.json moved.json --json
"$python" - out.txt <<'PY' || fail "diff --json is not the documented tqlab.diff/1 document"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "tqlab.diff/1" and d["exit_code"] == 1 and d["differs"] is True, d["exit_code"]
rows = {row["key"]: row for row in d["rows"]}
row = rows["k=tq:b=3 v=tq:b=3 window=0 sink=0 seeds=0,1"]
kl = [q for q in row["quantities"] if q["name"] == "attn_kl"][0]
assert kl["status"] == "differs" and abs(kl["rel_change"] - 0.5) < 1e-12, kl
assert d["summary"]["rows"]["same"] == 3, d["summary"]
PY

# within the combined standard error: marked ~, counted unless --ignore-within-se
edit nudged "m = r['tq:b=2']['metrics']['attn_kl']; m['mean'] += 0.5 * m['se']"
expect_exit 1 "within-SE change counts" -- "$TQLAB" diff a.json nudged.json
expect_contains out.txt " ~" "within the combined standard error"
expect_exit 0 "--ignore-within-se" -- "$TQLAB" diff a.json nudged.json --ignore-within-se
# a per-layer value under an unchanged mean
edit layer "r['tq:b=3,nc']['per_layer']['k_rel_mse'][1] *= 2"
expect_exit 1 "per-layer change" -- "$TQLAB" diff a.json layer.json
expect_contains out.txt "per_layer.k_rel_mse[layer=1]"

# runs in one file; context is not a difference; config and data are, the sha256 loudly
edit fewer "d['runs'] = [x for x in d['runs'] if x['k'] != 'q4_0']; d['runs'].append(dict(r['tq:b=2'], id='k=tq:b=4 v=tq:b=3 window=0 sink=0'))"
expect_exit 1 "runs in one file" -- "$TQLAB" diff a.json fewer.json
expect_contains out.txt "runs only in A (1)" "k=q4_0 v=q4_0 window=16 sink=0 seeds=0,1" "runs only in B (1)" "k=tq:b=4"
edit context "d['tqlab']['git_commit'] = 'feedbeef'; d['data']['path'] = 'elsewhere/small.safetensors'; d['config']['data']['path'] = 'x'; d['timing']['total_seconds'] = 1e6"
expect_exit 0 "git commit, paths and timing are not differences" -- "$TQLAB" diff a.json context.json
expect_contains out.txt "context" "feedbeef" "elsewhere/small.safetensors"
expect_exit 1 "--timing compares timing" -- "$TQLAB" diff a.json context.json --timing
expect_contains out.txt "timing.total_seconds"
edit data "d['data']['sha256'] = '0' * 64; d['config']['metrics']['needle']['trials'] = 8"
expect_exit 1 "other data" -- "$TQLAB" diff a.json data.json
expect_contains out.txt "WARNING: the data differ" "config.metrics.needle.trials" "config and data differences"
expect_exit 1 "other data, --json" -- "$TQLAB" diff a.json data.json --json
expect_contains err.txt "the data differ"

# ---------------------------------------------------------------- bounds and codebook documents
bounds=(--dims 16,32 --bits 1,2 --samples 400 --rotation-samples 0)  # passes at seeds 0 and 1
expect_exit 0 "verify-bounds" -- "$TQLAB" verify-bounds "${bounds[@]}" --json bounds.json
expect_exit 0 "verify-bounds again" -- "$TQLAB" verify-bounds "${bounds[@]}" --json bounds2.json
expect_exit 0 "bounds against a rerun" -- "$TQLAB" diff bounds.json bounds2.json
expect_contains out.txt "4 rows in both: 4 same"
expect_exit 0 "verify-bounds, seed 1" -- "$TQLAB" verify-bounds "${bounds[@]}" --seed 1 --json bounds3.json
expect_exit 1 "bounds, another seed" -- "$TQLAB" diff bounds.json bounds3.json
expect_contains out.txt "settings.seed" "row dim=16 bits=1" "d_mse_empirical"
# --metric selects quantities, not settings: the seed still differs, so the files do.
expect_exit 1 "only the theory" -- "$TQLAB" diff bounds.json bounds3.json --metric d_mse_theory --metric theorem1 \
  --metric theorem2.formula
expect_contains out.txt "settings.seed" "4 rows in both: 4 same"
expect_exit 0 "codebooks" -- "$TQLAB" codebook export --dims 16,32 --bits 2 -o cb.json
expect_exit 0 "codebooks, other order" -- "$TQLAB" codebook export --dims 32,16 --bits 2 -o cb2.json
expect_exit 0 "codebooks match by dim, bits, distribution" -- "$TQLAB" diff cb.json cb2.json
expect_exit 0 "one codebook" -- "$TQLAB" codebook export --dim 16 --bits 3 -o cb3.json
expect_exit 1 "another codebook" -- "$TQLAB" diff cb.json cb3.json
expect_contains out.txt "codebooks only in A (2)" "codebooks only in B (1)" "dim=16 bits=3 distribution=beta"

# ---------------------------------------------------------------- every committed result: itself, a table
for committed in "$root"/results/*.json; do
  [ -e "$committed" ] || continue
  case $(basename "$committed") in allocate_*) continue ;; esac  # tqlab.allocation/1: neither diff nor report reads it
  expect_exit 0 "$(basename "$committed") against itself" -- "$TQLAB" diff "$committed" "$committed"
  expect_exit 0 "$(basename "$committed") as a table" -- "$TQLAB" report "$committed"
done

# ---------------------------------------------------------------- diff: bad input, exit 2, one line
expect_exit 2 "missing file" -- "$TQLAB" diff a.json none.json
expect_error_line "none.json" "cannot be read"
echo '{"schema": ' >broken.json
expect_exit 2 "invalid JSON" -- "$TQLAB" diff broken.json a.json
expect_error_line "broken.json" "not valid JSON"
expect_exit 2 "two schemas" -- "$TQLAB" diff a.json bounds.json
expect_error_line "a.json" "bounds.json" "tqlab.sweep/1" "tqlab.bounds/2"
echo '{"schema": "tqlab.other/3"}' >other.json
expect_exit 2 "unknown schema" -- "$TQLAB" diff other.json other.json
expect_error_line "other.json" "tqlab.other/3"
echo '{"runs": []}' >noschema.json
expect_exit 2 "no schema" -- "$TQLAB" diff noschema.json a.json
expect_error_line "noschema.json" "schema"
expect_exit 2 "--metric selecting nothing" -- "$TQLAB" diff a.json a.json --metric atn_kl
expect_error_line "atn_kl" "attn_kl"
expect_exit 2 "negative --rtol" -- "$TQLAB" diff a.json a.json --rtol -1
expect_error_line "--rtol"
expect_exit 2 "one file" -- "$TQLAB" diff a.json
expect_error_line "tqlab diff"

# ---------------------------------------------------------------- report
expect_exit 0 "report (md)" -- "$TQLAB" report a.json
expect_contains out.txt "| k " "bits_kv" "compression" "k_rel_mse" "attn_kl" "attn_top1" "needle_top1@1" "front" \
  "| tq:b=3,nc " " ± " "(sd " "Pareto front of bits_kv vs attn_kl" "| window | sink |"
"$python" - out.txt <<'PY' || fail "report rows are not sorted by bits_kv with the front marked"
import sys
lines = [l for l in open(sys.argv[1]) if l.startswith("| ") and not l.startswith(("| k ", "| -"))]
cells = [[c.strip() for c in l.strip().strip("|").split("|")] for l in lines]
assert [c[0] for c in cells][0] == "tq:b=2", cells
bits = [float(c[4]) for c in cells]
assert bits == sorted(bits), bits
assert any(c[-2] == "✓" for c in cells) and cells[0][-2] == "✓", cells   # the fewest bits are on the front
PY
expect_exit 0 "report --format csv --metrics" -- "$TQLAB" report a.json --format csv --metrics bits_kv,attn_kl -o table.csv
"$python" - table.csv a.json <<'PY' || fail "csv report does not hold the results' numbers"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
runs = {r["k"]: r for r in json.load(open(sys.argv[2]))["runs"]}
assert len(rows) == 4 and rows[0]["k"] == "tq:b=2", rows
for row in rows:
    run = runs[row["k"]]
    assert float(row["attn_kl"]) == run["metrics"]["attn_kl"]["mean"]
    assert float(row["attn_kl_se"]) == run["metrics"]["attn_kl"]["se"]
    assert float(row["attn_kl_std"]) == run["metrics"]["attn_kl"]["std"]
    assert float(row["bits_kv"]) == run["bits"]["bits_kv"] and "bits_kv_se" not in row
    assert row["pareto_front"] in ("true", "false") and row["seeds"] == "0 1"
PY
expect_exit 2 "report: unknown metric" -- "$TQLAB" report a.json --metrics bits_kv,attn_kll
expect_error_line "a.json" "attn_kll"
expect_exit 2 "report: bounds file" -- "$TQLAB" report bounds.json
expect_error_line "bounds.json" "tqlab.bounds/2" "tqlab.sweep/1"
expect_exit 2 "report: bad format" -- "$TQLAB" report a.json --format tex
expect_error_line "--format" "tex"
expect_exit 2 "report: missing file" -- "$TQLAB" report none.json
expect_error_line "none.json"

finish
