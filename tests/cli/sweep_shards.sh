# tqlab sweep --shard K/N and tqlab merge through the real binary: shards computed under different
# kernel forms (TQLAB_KERNELS) merge into the unsharded document byte for byte outside "timing",
# whatever the shard count (empty shards too) and the order they are given in; tools/parallel_sweep.sh
# does the same with GNU parallel and keeps finished shards when run again; missing, duplicated,
# overlapping and foreign shards are each named on one line (exit 2); bad --shard values are refused.
source "$(dirname "$0")/lib.sh" "$@"
repo=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf -- *.safetensors *.json *.txt *.journal *.tmp-* shards par study
[ -x "$python" ] || { echo "SKIP: $python is absent (the checks read JSON with it)"; exit 77; }

mkdir -p shards study
expect_exit 0 "synth" -- "$TQLAB" synth -o kv.safetensors --layers 3 --kv-heads 2 --q-heads 4 --tokens 80 --dim 32
cat >study/config.json <<'JSON'
{"name": "shards", "data": {"path": "../kv.safetensors"},
 "grid": {"k": ["tq:b=3", "q4_0"], "v": ["tq:b=3"], "window": [0, 8]},
 "metrics": {"attention": {"chunk": 32}, "needle": {"trials": 12, "synth_trials": 2}, "per_head": true},
 "seeds": [0, 1]}
JSON
expect_exit 0 "unsharded sweep" -- "$TQLAB" sweep --config study/config.json --out whole.json --threads 2 --quiet

# The kernel forms this CPU runs besides the portable one (tqlab --version fails on a form it lacks).
forms=(portable)
for form in avx2 avx512; do TQLAB_KERNELS=$form "$TQLAB" --version >/dev/null 2>&1 && forms+=("$form"); done
[ ${#forms[@]} -ge 2 ] || echo "note: this CPU runs the portable kernels only"

# shards N: shards 1..N of the study into shards/N-K.json, each under the next kernel form.
shards() {
  local count=$1 k
  for ((k = 1; k <= count; k++)); do
    expect_exit 0 "shard $k/$count" -- env TQLAB_KERNELS="${forms[k % ${#forms[@]}]}" \
      "$TQLAB" sweep --config study/config.json --shard "$k/$count" --out "shards/$count-$k.json" --threads 1 --quiet
  done
}
for count in 1 3 12; do  # 12 exceeds the 6 items and 2 trials: some of those shards are empty
  shards $count
  list=(shards/$count-*.json)
  expect_exit 0 "merge $count shards" -- "$TQLAB" merge "${list[@]}" -o merged.json --quiet
  expect_exit 0 "merged $count shards = unsharded" -- "$TQLAB" diff whole.json merged.json --rtol 0 --atol 0
  same_outside_timing whole.json merged.json || fail "$count shards: merged.json differs from whole.json outside timing"
done
"$python" -c "import json; d = json.load(open('shards/12-12.json')); assert d['schema'] == 'tqlab.shard/1' and d['units'] == [], d['work']" \
  || fail "shard 12/12 should be an empty tqlab.shard/1 document"
expect_exit 0 "merge in another order" -- "$TQLAB" merge shards/3-3.json shards/3-1.json shards/3-2.json -o reordered.json
same_outside_timing whole.json reordered.json || fail "the order of the shards changed the document"
expect_contains out.txt "k_rel_mse" "q4_0"
ls shards/*.journal shards/*.tmp-* >/dev/null 2>&1 && fail "shards left journals or temporaries: $(ls shards)"

# ---------------------------------------------------------------- a model block
# End-to-end units ((run, seed, chunk) and each chunk's base) shard and merge like items, with the
# offline metrics on the model's own Q/K/V (made again by each shard and by merge) and without.
head -c 3000 "$repo/README.md" >text.txt
for offline in true false; do
  cat >model.json <<JSON
{"name": "model-shards", "model": {"path": "$repo/data/tinyllama_hf", "text": "text.txt", "ctx": 128, "chunks": 4},
 "grid": {"k": ["tq:b=3,nc", "tq:b=2"], "v": ["tq:b=3,nc"]},
 "metrics": {"reconstruction": $offline, "attention": $offline, "needle": false}, "seeds": [0, 1]}
JSON
  expect_exit 0 "model block ($offline): unsharded" -- "$TQLAB" sweep --config model.json --out model_whole.json --quiet
  for count in 2 5; do
    rm -f model-*.json
    for ((k = 1; k <= count; k++)); do
      expect_exit 0 "model block ($offline): shard $k/$count" -- env TQLAB_KERNELS="${forms[k % ${#forms[@]}]}" \
        "$TQLAB" sweep --config model.json --shard "$k/$count" --out "model-$k.json" --threads 1 --quiet
    done
    expect_exit 0 "model block ($offline): merge $count" -- "$TQLAB" merge model-*.json -o model_merged.json --quiet
    same_outside_timing model_whole.json model_merged.json ||
      fail "model block ($offline), $count shards: the merged document differs from the unsharded one"
  done
done
"$python" -c "import json; d = json.load(open('model_merged.json')); assert 'e2e_kld' in d['runs'][0]['metrics'], d['runs'][0]" \
  || fail "the merged model-block document has no e2e metrics"

# ---------------------------------------------------------------- what merge refuses
# Items only (synthetic trials outweigh this small dump's items): each of 3 shards holds some.
"$python" -c "import json; c = json.load(open('study/config.json')); c['metrics']['needle']['synth_trials'] = 0; json.dump(c, open('study/items.json', 'w'))"
sed 's/"shards"/"other"/' study/items.json >study/other.json
for k in 1 2 3; do
  expect_exit 0 "items shard $k/3" -- "$TQLAB" sweep --config study/items.json --shard $k/3 --out items-$k.json --quiet
done
cp items-2.json copy.json
expect_exit 0 "a shard of another config" -- "$TQLAB" sweep --config study/other.json --shard 2/3 --out foreign.json --quiet
expect_exit 0 "half" -- "$TQLAB" sweep --config study/items.json --shard 1/2 --out half.json --quiet
expect_exit 0 "the three" -- "$TQLAB" merge items-1.json items-2.json items-3.json -o items.json --quiet
expect_exit 2 "missing shard" -- "$TQLAB" merge items-1.json items-3.json -o bad.json
expect_error_line "shard 2/3 is missing (units"
expect_exit 2 "duplicated shard" -- "$TQLAB" merge items-1.json items-2.json copy.json items-3.json -o bad.json
expect_error_line "'items-2.json' and 'copy.json' are duplicates: both are shard 2/3"
expect_exit 2 "a file twice" -- "$TQLAB" merge items-1.json items-2.json items-2.json items-3.json -o bad.json
expect_error_line "'items-2.json' is given twice"
expect_exit 2 "overlapping shards" -- "$TQLAB" merge half.json items-1.json items-2.json items-3.json -o bad.json
expect_error_line "'half.json' (1/2) and 'items-1.json' (1/3) overlap: both hold units"
expect_exit 2 "foreign shard" -- "$TQLAB" merge items-1.json foreign.json items-3.json -o bad.json
expect_error_line "2 problems" "'foreign.json' (2/3) is foreign: another config" "shard 2/3 is missing"
expect_exit 2 "every problem at once" -- "$TQLAB" merge items-1.json copy.json foreign.json half.json items-2.json -o bad.json
expect_error_line "foreign" "duplicates" "overlap" "missing"
expect_exit 2 "results are not a shard" -- "$TQLAB" merge whole.json -o bad.json
expect_error_line "whole.json" "not a tqlab.shard/1 document"
expect_exit 2 "output over a shard" -- "$TQLAB" merge items-1.json items-2.json items-3.json -o items-2.json
expect_error_line "items-2.json" "choose another output"
[ -e bad.json ] && fail "a refused merge wrote bad.json"
cmp -s copy.json items-2.json || fail "merge -o over a shard changed it"
for bad in 0/3 4/3 3 a/b 1/0 -1/3; do
  expect_exit 2 "--shard $bad" -- "$TQLAB" sweep --config study/config.json --shard "$bad" --out bad.json
  expect_error_line "--shard '$bad'"
done

# ---------------------------------------------------------------- GNU parallel on this machine
if command -v parallel >/dev/null; then
  expect_exit 0 "parallel_sweep.sh" -- env TQLAB="$TQLAB" bash "$repo/tools/parallel_sweep.sh" study/config.json par 4 par.json 2
  same_outside_timing whole.json par.json || fail "parallel_sweep.sh: par.json differs from whole.json outside timing"
  before=$(stat -c %Y.%s par/shard-*-of-4.json)
  sleep 1.1  # a rewritten file would show a later mtime
  expect_exit 0 "parallel_sweep.sh again" -- env TQLAB="$TQLAB" bash "$repo/tools/parallel_sweep.sh" study/config.json par 4 par.json 2
  [ "$(stat -c %Y.%s par/shard-*-of-4.json)" = "$before" ] || fail "finished shards were computed again"
  same_outside_timing whole.json par.json || fail "the second parallel_sweep.sh run changed par.json"
else
  fail "GNU parallel is missing: run tools/install_deps.sh"
fi

finish
