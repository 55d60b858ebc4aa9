# Documents tqlab wrote, damaged and read back (docs/RELIABILITY.md#read-back): an allocation profile
# given with --profile-file or found as the cache, profile shards and sweep shards joined by merge,
# and a sweep journal resumed. Each damage a hostile user made (issue: "a damaged allocation profile
# is trusted") is exit 2 naming the file, the unit or key path, and what was expected; a damaged
# cache is a warning and a new measurement instead.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- *.safetensors *.json *.txt cache shards
[ -x "$python" ] || { echo "SKIP: $python is absent (the damage is made with it)"; exit 77; }

expect_exit 0 "synth" -- "$TQLAB" synth -o small.safetensors --layers 2 --kv-heads 2 --q-heads 4 --tokens 64 --dim 64
cat > offline.json <<'JSON'
{"name": "rb", "data": {"path": "small.safetensors"}, "metrics": {"attention": {"chunk": 64}}, "seeds": [0]}
JSON
ladder="tq:b=2,nc,tq:b=4,nc"
mkdir -p cache
expect_exit 0 "allocate (the profile cached)" -- "$TQLAB" allocate --config offline.json --budget 3 \
  --candidates "$ladder" --cache-dir cache -o whole.json --quiet
cached=$(ls cache/tqlab-profile-offline-*.json)
cp "$cached" profile.json

# damage NAME PYTHON: profile.json copied to NAME.json, PYTHON run with `p` = its "profile" object.
damage() {
  "$python" - "$1.json" <<PY || { echo "FAIL: could not damage $1"; exit 1; }
import json, sys
d = json.load(open("profile.json"))
p = d["profile"]
$2
json.dump(d, open(sys.argv[1], "w"))
PY
}
# "${solve[@]}" NAME.json: allocate with --profile-file NAME.json
solve=("$TQLAB" allocate --config offline.json --budget 3 --candidates "$ladder" -o bad.json --quiet --profile-file)
damage last_unit 'p["units"].pop()'
expect_refused "profile without its last unit" "last_unit.json" "units" "unit 'L1.h1.V' is missing" -- "${solve[@]}" last_unit.json
damage first_unit 'p["units"].pop(0)'
expect_refused "profile without its first unit" "first_unit.json" "unit 'L0.h0.K' is missing" -- "${solve[@]}" first_unit.json
damage twice 'p["units"].append(p["units"][3])'
expect_refused "a unit twice" "twice.json" "unit 'L0.h1.V' appears twice" -- "${solve[@]}" twice.json
damage last_head 'del p["units"][-2:]'
expect_refused "a whole head gone" "last_head.json" "unit 'L1.h1.K' is missing" -- "${solve[@]}" last_head.json
damage huge_damage 'p["units"][2]["candidates"][0]["components"]["attn_kl"][0] = -1e300'
expect_refused "a damage of -1e300" "huge_damage.json" "units[2].candidates[0].components.attn_kl[0]" "unit L0.h1.K" \
  "-1e+300" "at most 1e+100" -- "${solve[@]}" huge_damage.json
damage beyond 'p["units"][1]["candidates"][1]["components"]["rel_mse"][0] = 1e308'
expect_refused "a damage of 1e308" "beyond.json" "unit L0.h0.V" "1e+308" "at most 1e+100" -- "${solve[@]}" beyond.json
damage zero_bytes 'p["units"][0]["candidates"][0]["bytes"] = 0'
expect_refused "bytes 0" "zero_bytes.json" "units[0].candidates[0].bytes" "unit L0.h0.K: 0 bytes" -- "${solve[@]}" zero_bytes.json
damage zero_values 'p["units"][0]["values"] = 0'
expect_refused "values 0" "zero_values.json" "units[0].values" "holds 0 values" -- "${solve[@]}" zero_values.json
damage seeds 'p["seeds"] = [0, 0]'
expect_refused "seeds repeated" "seeds.json" "seeds" "the same" -- "${solve[@]}" seeds.json
damage candidates 'p["candidates"] = ["tq:b=2,nc", "tq:b=3,nc"]'
expect_refused "other candidates, same content key" "candidates.json" "candidates: [tq:b=2,nc, tq:b=3,nc]" \
  "expected this command's" -- "${solve[@]}" candidates.json

# The cache damaged the same ways: a warning naming what is wrong, a new measurement, the same allocation.
for name in last_unit twice huge_damage zero_bytes; do
  cp "$name.json" "$cached"
  expect_exit 0 "allocate over a cache damaged ($name)" -- "$TQLAB" allocate --config offline.json --budget 3 \
    --candidates "$ladder" --cache-dir cache -o again.json
  expect_contains err.txt "profile cache" "is not usable" "measuring again"
  "$python" - whole.json again.json <<'PY' || fail "the profile measured again over a damaged cache ($name) differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["allocation"] == b["allocation"] and a["profile"]["units"] == b["profile"]["units"]
assert not b["cache"]["hit"]
PY
done

# ---------------------------------------------------------------- profile shards
mkdir -p shards
for k in 1 2 3; do
  expect_exit 0 "profile shard $k/3" -- "$TQLAB" allocate --config offline.json --candidates "$ladder" \
    --shard "$k/3" -o "shards/p$k.json" --quiet
done
"$python" - shards/p2.json shards/p2c.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["shard"]["count"] = 4; json.dump(d, open(sys.argv[2], "w"))
PY
expect_refused "a profile shard's count edited" "p2c.json" "(2/4) holds units" "shard 2/4 of this job holds" -- \
  "$TQLAB" merge shards/p1.json shards/p2c.json shards/p3.json -o bad.json
"$python" - shards/p1.json shards/p1n.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["profile"]["units"][0]["candidates"][0]["components"]["rel_mse"][0] = -0.5
json.dump(d, open(sys.argv[2], "w"))
PY
expect_refused "a negative value in a profile shard" "p1n.json" "unit L0.h0.K" "negative" -- \
  "$TQLAB" merge shards/p1n.json shards/p2.json shards/p3.json -o bad.json

# ---------------------------------------------------------------- sweep shards and journals
cat > sweep.json <<'JSON'
{"name": "rbs", "data": {"path": "small.safetensors"}, "metrics": {"attention": {"chunk": 32}, "needle": true},
 "grid": {"k": ["tq:b=3,nc"], "v": ["tq:b=3,nc"]}, "seeds": [0]}
JSON
for k in 1 2 3; do
  expect_exit 0 "sweep shard $k/3" -- "$TQLAB" sweep --config sweep.json --shard "$k/3" --out "shards/s$k.json" --quiet
done
# sweep_edit IN OUT PYTHON: the shard IN with PYTHON run on `d`, written to OUT.
sweep_edit() {
  "$python" - "$1" "$2" <<PY || { echo "FAIL: could not edit $1"; exit 1; }
import json, sys
d = json.load(open(sys.argv[1]))
def needles(d):
    for unit in d["units"]:
        for rs in unit.get("run_seeds", []):
            for trial in rs["needle"]:
                for margin in trial:
                    yield margin
$3
json.dump(d, open(sys.argv[2], "w"))
PY
}
sweep_edit shards/s2.json shards/s2c.json 'd["shard"]["count"] = 4'
expect_refused "a sweep shard's count edited 3 -> 4" "s2c.json" "(2/4) holds units" -- \
  "$TQLAB" merge shards/s1.json shards/s2c.json shards/s3.json -o bad.json
for weight in 1e+308 -0.25; do
  sweep_edit shards/s1.json shards/s1w.json "next(needles(d))[1] = $weight"
  expect_refused "a needle weight of $weight" "s1w.json" "needle" "$weight" -- \
    "$TQLAB" merge shards/s1w.json shards/s2.json shards/s3.json -o bad.json
done
expect_exit 0 "the shards as written merge" -- "$TQLAB" merge shards/s1.json shards/s2.json shards/s3.json -o merged.json

finish
