# A sweep config with a model block (docs/SWEEP.md#model), through the real binary on the bundled
# model (data/tinyllama_hf):
# - without "data", every run gets the offline metrics of the model's own Q/K/V and the e2e metrics;
#   the offline ones equal a sweep of `tqlab dump --dtype f32`'s file, the e2e ones equal `tqlab ppl`'s
#   for the same run, to the last bit; the temporary dump is gone afterwards;
# - the document is the same for --threads 1 and 2 (outside "timing"), and report and diff read it;
# - "text" tokenizes with the model's tokenizer.json (one token per byte here: the same numbers as
#   the text's bytes as token ids), and the results record the text's and the tokenizer's sha256;
#   with --chunks N only the ids the chunks read are made (tokens.count N x ctx);
# - a bad model block is one line and exit 2, naming the key.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- *.json *.txt *.safetensors *.npy tmp
repo="$(cd "$(dirname "$0")/../.." && pwd)"
model="$repo/data/tinyllama_hf"
windows="$model/windows.npy"
require_numpy "the checks read the results with numpy"
mkdir -p tmp
export TMPDIR="$PWD/tmp"  # where the model's dump is made, and must not remain

cat > model.json <<JSON
{"name": "model-block", "model": {"path": "$model", "tokens": "$windows", "ctx": 128, "chunks": 6},
 "grid": {"k": ["tq:b=3,nc", "tq:b=2"], "v": ["tq:b=3,nc"]}, "runs": [{"k": "tq:b=4", "v": "tq:b=4", "window": 16}],
 "metrics": {"attention": {"chunk": 128, "window_mode": "tail"}, "needle": {"trials": 8, "synth_trials": 0}},
 "seeds": [0, 3]}
JSON
for threads in 1 2; do
  expect_exit 0 "sweep with a model block, --threads $threads" -- \
    "$TQLAB" sweep --config model.json --out "m$threads.json" --threads "$threads" --quiet
done
cp out.txt table.txt
expect_contains table.txt "dPPL_%" "e2e_kld" "tq:b=3,nc"
[ -z "$(ls tmp)" ] || fail "the model's dump was left in TMPDIR: $(ls tmp)"

# The same runs through tqlab dump + a sweep of its file, and through tqlab ppl.
expect_exit 0 "dump f32" -- "$TQLAB" dump --model "$model" --tokens "$windows" --ctx 128 --chunks 6 --dtype f32 \
  -o kv.safetensors --quiet
"$python" - model.json kv.safetensors <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
del config["model"]
config["data"] = {"path": sys.argv[2]}
json.dump(config, open("dumped.json", "w"))
PY
expect_exit 0 "sweep of the dump" -- "$TQLAB" sweep --config dumped.json --out d.json --quiet
for run in "tq:b=3,nc tq:b=3,nc 0" "tq:b=2 tq:b=3,nc 0" "tq:b=4 tq:b=4 16"; do
  set -- $run
  expect_exit 0 "ppl k=$1 v=$2 window=$3" -- "$TQLAB" ppl --model "$model" --tokens "$windows" --ctx 128 --chunks 6 \
    --k "$1" --v "$2" --window "$3" --window-mode tail --seeds 0,3 -o "ppl_$1_$3.json" --quiet
done
"$python" - m1.json m2.json d.json <<'PY' || fail "the model block's document is not what dump + sweep and ppl give"
import glob, json, sys
m1, m2, dumped = (json.load(open(p)) for p in sys.argv[1:])
for d in (m1, m2):
    d.pop("timing")
assert m1 == m2, "documents differ between --threads 1 and 2"
assert m1["data"]["path"] is None and m1["data"]["source"] == "model", m1["data"]
assert m1["data"]["layout"] == "seq head token dim" and len(m1["data"]["layers"]) == 4
assert m1["config"]["model"]["chunks"] == 6 and m1["config"]["model"]["window_mode"] == "tail"
assert "data" not in m1["config"], m1["config"]
assert m1["e2e"]["chunks"] == 6 and m1["e2e"]["ctx"] == 128 and m1["e2e"]["scored_tokens"] == 6 * 63
ppl = {}
for path in glob.glob("ppl_*.json"):
    d = json.load(open(path))
    ppl[d["runs"][0]["id"]] = d
for run, offline in zip(m1["runs"], dumped["runs"]):
    assert run["id"] == offline["id"], (run["id"], offline["id"])
    assert run["bits"] == offline["bits"], run["id"]
    for name, value in offline["metrics"].items():
        assert run["metrics"][name] == value, (run["id"], name, run["metrics"][name], value)
    e2e = ppl[run["id"]]["runs"][0]["metrics"]
    for name, value in e2e.items():
        assert run["metrics"][name] == value, (run["id"], name)
    assert list(run["metrics"])[-len(e2e):] == list(e2e), "the e2e metrics do not come after the offline ones"
    assert run["metrics"]["e2e_kld"]["mean"] > 0
assert m1["e2e"]["base"] == ppl[m1["runs"][0]["id"]]["e2e"]["base"]
PY
expect_exit 0 "report reads the document" -- "$TQLAB" report m1.json
expect_contains out.txt "e2e_ppl_delta_pct" "e2e_kld" "attn_kl"
expect_exit 0 "diff of the thread counts" -- "$TQLAB" diff m1.json m2.json

# "text": the bundled tokenizer has one token per byte, so a text is its bytes as ids.
head -c 2048 /usr/share/common-licenses/GPL-3 >text.txt
"$python" -c 'import numpy as np; np.save("text_ids.npy", np.frombuffer(open("text.txt", "rb").read(), np.uint8).astype(np.int32))'
cat > text.json <<JSON
{"model": {"path": "$model", "text": "text.txt", "ctx": 256},
 "runs": [{"k": "tq:b=3", "v": "tq:b=3"}], "metrics": {"reconstruction": false, "attention": false, "needle": false}}
JSON
expect_exit 0 "sweep with a text" -- "$TQLAB" sweep --config text.json --out text_out.json --quiet
expect_exit 0 "ppl with --text" -- "$TQLAB" ppl --model "$model" --text text.txt --ctx 256 --k tq:b=3 --v tq:b=3 \
  -o text_ppl.json --quiet
expect_exit 0 "ppl with the bytes as token ids" -- "$TQLAB" ppl --model "$model" --tokens text_ids.npy --ctx 256 \
  --k tq:b=3 --v tq:b=3 -o ids_ppl.json --quiet
"$python" - text_out.json text_ppl.json ids_ppl.json "$(sha256sum text.txt | cut -d' ' -f1)" <<'PY' ||
import json, sys
swept, text, ids = (json.load(open(p)) for p in sys.argv[1:4])
for d in (swept, text):
    assert d["tokens"]["source"] == "text" and d["tokens"]["sha256"] == sys.argv[4], d["tokens"]
    assert d["tokens"]["tokenizer"]["sha256"] == "567888a60646b10fa50285a9edb4ef2e435280acabdcdb122965e0574e7c8657"
    assert d["tokens"]["count"] == 2048 and d["tokens"]["add_special"] is False
assert "data" not in swept and "data" not in swept["config"]
assert swept["runs"][0]["metrics"] == text["runs"][0]["metrics"] == ids["runs"][0]["metrics"]
assert swept["e2e"]["base"] == ids["e2e"]["base"]
assert text["config"]["model"]["text"] == "text.txt"
PY
  fail "a text does not give what its bytes as token ids give, or its identity is not recorded"
# --chunks N tokenizes only the N x ctx ids the chunks read: the count says so,
# and the numbers are those of the whole text's first ids.
expect_exit 0 "ppl with --text and --chunks 2" -- "$TQLAB" ppl --model "$model" --text text.txt --ctx 256 \
  --chunks 2 --k tq:b=3 --v tq:b=3 -o text_two.json --quiet
expect_exit 0 "ppl with the ids and --chunks 2" -- "$TQLAB" ppl --model "$model" --tokens text_ids.npy --ctx 256 \
  --chunks 2 --k tq:b=3 --v tq:b=3 -o ids_two.json --quiet
"$python" - text_two.json ids_two.json <<'PY' ||
import json, sys
text, ids = (json.load(open(p)) for p in sys.argv[1:3])
assert text["tokens"]["count"] == 512, text["tokens"]["count"]
assert text["e2e"]["base"] == ids["e2e"]["base"] and text["runs"][0]["metrics"] == ids["runs"][0]["metrics"]
PY
  fail "ppl --text --chunks 2 tokenized more than its chunks read, or changed the numbers"
[ -z "$(ls tmp)" ] || fail "something was left in TMPDIR: $(ls tmp)"

# ---------------------------------------------------------------- bad model blocks: exit 2, one line
bad() {  # bad DESCRIPTION JSON NEEDLE...
  local description=$1 config=$2
  shift 2
  printf '%s\n' "$config" >bad.json
  expect_exit 2 "$description" -- "$TQLAB" sweep --config bad.json --out bad_out.json --quiet
  expect_error_line "$@"
  [ -e bad_out.json ] && fail "$description: an output was written"
}
runs='"runs": [{"k": "tq:b=3", "v": "tq:b=3"}]'
bad "no data and no model" "{$runs}" "bad.json" "no data" '"model"'
bad "neither tokens nor text" "{\"model\": {\"path\": \"$model\"}, $runs}" "model" '"tokens"' '"text"'
bad "tokens and text" "{\"model\": {\"path\": \"$model\", \"tokens\": \"$windows\", \"text\": \"text.txt\"}, $runs}" \
  "model" "one of them"
bad "an unknown key" "{\"model\": {\"path\": \"$model\", \"tokens\": \"$windows\", \"ctz\": 3}, $runs}" "model" "ctz"
bad "a missing checkpoint" "{\"model\": {\"path\": \"nowhere\", \"tokens\": \"$windows\"}, $runs}" "nowhere"
bad "a bad score" "{\"model\": {\"path\": \"$model\", \"tokens\": \"$windows\", \"score\": \"half\"}, $runs}" \
  "model.score" "second-half, all"
bad "window modes that disagree" \
  "{\"model\": {\"path\": \"$model\", \"tokens\": \"$windows\", \"window_mode\": \"tail\"}, $runs, \"metrics\": {\"attention\": {\"window_mode\": \"recent\"}}}" \
  "model.window_mode" "metrics.attention.window_mode"
bad "too few tokens" "{\"model\": {\"path\": \"$model\", \"tokens\": \"$windows\", \"ctx\": 256, \"chunks\": 9}, $runs}" \
  "model.chunks 9" "2048"
bad "a spec the model cannot take" "{\"model\": {\"path\": \"$model\", \"tokens\": \"$windows\", \"ctx\": 256}, \"runs\": [{\"k\": \"q4_0\", \"v\": \"tq:b=3,block=48\"}]}" \
  "runs[0].v" "block=48"
bad "a tokenizer without text" "{\"model\": {\"path\": \"$model\", \"tokens\": \"$windows\", \"tokenizer\": \"$model\"}, $runs}" \
  "model.tokenizer" "text"
[ -z "$(ls tmp)" ] || fail "a failed sweep left something in TMPDIR: $(ls tmp)"
finish
