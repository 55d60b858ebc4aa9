# tqlab allocate --shard K/N and tqlab merge of profile shards, through the real binary
# (docs/ALLOCATE.md#profiling-in-shards):
# - the offline profile of a small synthetic dump and the model profile of the bundled model, each
#   cut into shards (more shards than work units too: empty ones), run side by side and merged, are
#   the unsharded profile byte for byte outside its "seconds";
# - allocate --profile-file solves the merged profile into the unsharded allocation, per head and per
#   layer, measuring nothing;
# - a missing, duplicated or foreign shard, a profile of another config, a shard given as a profile and
#   options a shard cannot take each exit 2 with one line naming them, and leave no output behind.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
model="$repo/data/tinyllama_hf"
[ -x "$python" ] || { echo "SKIP: $python is absent (the checks read JSON with it)"; exit 77; }

# same_profile A B: two tqlab.profile/1 documents are the same bytes once the line of the profile's
# wall time is left out.
same_profile() {
  "$python" - "$1" "$2" <<'PY'
import re, sys
texts = [re.sub(rb'\n *"seconds": [^\n]*\n', b"\n", open(p, "rb").read()) for p in sys.argv[1:]]
assert b'"schema": "tqlab.profile/1"' in texts[0] and len(texts[0]) > 1000, sys.argv[1]
sys.exit(0 if texts[0] == texts[1] else 1)
PY
}

expect_exit 0 "synth" -- "$TQLAB" synth -o small.safetensors --layers 3 --kv-heads 2 --q-heads 4 --tokens 80 --dim 64
cat > offline.json <<'JSON'
{"data": {"path": "small.safetensors"}, "metrics": {"attention": {"chunk": 64}}, "seeds": [0, 1]}
JSON
ladder="tq:b=2,nc,tq:b=3,nc,tq:b=4,nc,fp16"
mkdir -p whole
expect_exit 0 "unsharded offline profile" -- "$TQLAB" allocate --config offline.json --budget tq:b=3,nc \
  --candidates "$ladder" --cache-dir whole -o whole.json --quiet
# 8 work units (the ladder's keys and values): 3 shards, and 10 (two of them empty).
for count in 3 10; do
  pids=()
  for index in $(seq 1 "$count"); do
    "$TQLAB" allocate --config offline.json --shard "$index/$count" --candidates "$ladder" --threads 1 \
      -o "off-$index-of-$count.json" --quiet 2>"off-$index-of-$count.err" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || fail "an offline shard of $count failed: $(cat off-*-of-"$count".err)"; done
  expect_exit 0 "merge $count offline shards" -- "$TQLAB" merge off-*-of-"$count".json -o "off-$count.json" --quiet
  expect_contains out.txt "offline profile: 12 units x 4 candidates x 2 seeds"
  same_profile whole/tqlab-profile-offline-*.json "off-$count.json" ||
    fail "the offline profile merged from $count shards is not the unsharded one"
done
"$python" - off-*-of-10.json <<'PY' || fail "10 shards of 8 work units should leave two empty"
import json, sys
work = [json.load(open(p))["work"] for p in sys.argv[1:]]
assert all(w["units"] == 8 and len(w["costs"]) == 8 for w in work), work
assert sum(w["holds"] == [] for w in work) == 2, [w["holds"] for w in work]
PY

# The merged profile solves into the unsharded allocation, per head and (summed) per layer.
expect_exit 0 "allocate --profile-file" -- "$TQLAB" allocate --config offline.json --budget tq:b=3,nc \
  --candidates "$ladder" --profile-file off-3.json -o from_shards.json
expect_contains err.txt "offline profile from 'off-3.json'"
grep -q "profile measured" err.txt && fail "allocate --profile-file measured a profile"
expect_exit 0 "allocate per layer, unsharded" -- "$TQLAB" allocate --config offline.json --budget 3.5 \
  --candidates "$ladder" --granularity layer --no-cache -o layer_whole.json --quiet
expect_exit 0 "allocate per layer --profile-file" -- "$TQLAB" allocate --config offline.json --budget 3.5 \
  --candidates "$ladder" --granularity layer --profile-file off-10.json -o layer_shards.json --quiet
"$python" - whole.json from_shards.json layer_whole.json layer_shards.json <<'PY' || fail "the allocations differ"
import json, sys
docs = [json.load(open(p)) for p in sys.argv[1:]]
for d in docs:
    for key in ("timing", "cache"):
        d.pop(key)
    d["profile"].pop("seconds")
assert docs[0] == docs[1], "per head"
assert docs[2] == docs[3], "per layer"
PY

# ---------------------------------------------------------------- the model profile
cat > model.json <<JSON
{"model": {"path": "$model", "tokens": "$model/windows.npy", "ctx": 64, "chunks": 2}, "seeds": [0, 1]}
JSON
model_ladder="tq:b=2,nc,tq:b=4,nc"
expect_exit 0 "unsharded model profile" -- "$TQLAB" allocate --config model.json --budget 3.2 \
  --candidates "$model_ladder" --granularity layer --cache-dir whole -o model_whole.json --quiet
# 8 units x 2 candidates x 2 seeds = 32 passes, in 3 shards side by side.
pids=()
for index in 1 2 3; do
  "$TQLAB" allocate --config model.json --shard "$index/3" --candidates "$model_ladder" --granularity layer \
    --threads 1 -o "model-$index.json" 2>"model-$index.err" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || fail "a model shard failed: $(cat model-*.err)"; done
expect_contains model-2.err "shard 2/3 holds"
expect_exit 0 "merge the model shards" -- "$TQLAB" merge model-1.json model-2.json model-3.json -o model_merged.json \
  --quiet
same_profile whole/tqlab-profile-model-*.json model_merged.json ||
  fail "the model profile merged from 3 shards is not the unsharded one"
"$python" - model-1.json model-2.json model-3.json <<'PY' || fail "the model shards are not balanced by cost"
import json, sys
work = [json.load(open(p))["work"] for p in sys.argv[1:]]
held = [sum(last - first + 1 for first, last in w["holds"]) for w in work]
assert sum(held) == 32 and held[0] < held[2], held  # a pass of layer 0 costs more than one of layer 3
cost = [sum(w["costs"][u] for first, last in w["holds"] for u in range(first, last + 1)) for w in work]
assert max(cost) - min(cost) <= max(work[0]["costs"]), cost
PY
expect_exit 0 "allocate the model from its merged profile" -- "$TQLAB" allocate --config model.json --budget 3.2 \
  --candidates "$model_ladder" --granularity layer --profile-file model_merged.json -o model_shards.json --quiet
"$python" - model_whole.json model_shards.json <<'PY' || fail "the model allocations differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for d in (a, b):
    for key in ("timing", "cache"):
        d.pop(key)
    d["profile"].pop("seconds")
assert a == b
PY

# ---------------------------------------------------------------- bad inputs
# Each refused with exit 2 and one line naming them, no output written (expect_refused).
expect_refused "a missing shard" "shard 2/3 is missing" -- "$TQLAB" merge model-1.json model-3.json -o bad.json --quiet
expect_refused "a shard twice" "'model-1.json' is given twice" -- "$TQLAB" merge model-1.json model-2.json model-3.json \
  model-1.json -o bad.json --quiet
cp model-2.json copy-2.json
expect_refused "two files of one shard" "are duplicates: both are shard 2/3" -- "$TQLAB" merge model-1.json \
  model-2.json model-3.json copy-2.json -o bad.json --quiet
expect_exit 0 "a shard of another profile" -- "$TQLAB" allocate --config model.json --shard 2/3 \
  --candidates tq:b=2,nc,tq:b=3,nc --granularity layer -o other-2.json --quiet
expect_refused "a foreign shard" "'other-2.json' (2/3) is foreign: another profile (content key" -- "$TQLAB" merge \
  model-1.json other-2.json model-3.json -o bad.json --quiet
expect_refused "a whole profile among its shards" "not a tqlab.profile-shard/1" "a whole profile" -- "$TQLAB" merge \
  model-2.json whole/tqlab-profile-model-*.json -o bad.json --quiet

expect_refused "a profile of other seeds" "--profile-file 'model_merged.json'" "content key" -- "$TQLAB" allocate \
  --config model.json --budget 3.2 --candidates "$model_ladder" --granularity layer --seeds 0 \
  --profile-file model_merged.json -o bad.json --quiet
expect_refused "a shard as the profile" "model-1.json" "tqlab merge" -- "$TQLAB" allocate --config model.json \
  --budget 3.2 --candidates "$model_ladder" --granularity layer --profile-file model-1.json -o bad.json --quiet
expect_refused "--shard with --verify" "--shard 1/3" "--verify" -- "$TQLAB" allocate --config offline.json \
  --shard 1/3 --verify -o bad.json --quiet
expect_refused "--shard with --budget" "--shard 1/3" "--budget" -- "$TQLAB" allocate --config offline.json --shard 1/3 \
  --budget 3 -o bad.json --quiet
expect_refused "--shard 0/3" "--shard '0/3'" -- "$TQLAB" allocate --config offline.json --shard 0/3 -o bad.json --quiet
expect_refused "--shard 2" "--shard '2'" "K/N" -- "$TQLAB" allocate --config offline.json --shard 2 -o bad.json --quiet
expect_refused "no budget and no shard" "--budget" -- "$TQLAB" allocate --config offline.json -o bad.json --quiet
finish
