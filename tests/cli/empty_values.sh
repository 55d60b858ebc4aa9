# The empty-value rule (cli/shared_options.cpp, docs/RELIABILITY.md#empty-values): '' for any option
# or argument of any command — an unset shell variable — is exit 2 with one line naming the option,
# before any work; never a fall-back to a default or the config (ppl --k '' --v '' used to report the
# exact cache as a perfect result; sweep --out '' wrote the config's output). Every option with a
# value that a command's --help lists is tried, then the cases with an otherwise complete command line.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
model="$repo/data/tinyllama_hf"
rm -f -- *.json *.txt *.safetensors

# Every option that takes a value, from each command's --help ("--name TYPE" or "-o,--name TYPE").
for command in inspect synth roundtrip "codebook export" verify-bounds sweep diff merge report tokenize ppl dump \
  allocate; do
  # shellcheck disable=SC2086
  options=$("$TQLAB" $command --help | sed -n 's/^ *\(-[a-z],\)\{0,1\}\(--[a-z0-9-]*\)\(,--[a-z0-9-]*\)* \(TEXT\|INT\|UINT\|FLOAT\)\b.*/\2/p')
  [ -n "$options" ] || fail "tqlab $command --help lists no option with a value"
  for option in $options; do
    # The message is the rule's, or that of the option's own check (a choice list, a seed) run first.
    # shellcheck disable=SC2086
    expect_refused "tqlab $command $option ''" "$option" -- "$TQLAB" $command "$option" ''
  done
done

# The defects met, each with an otherwise complete command line.
"$TQLAB" synth -o kv.safetensors --layers 2 --kv-heads 1 --q-heads 2 --tokens 64 --dim 64 >/dev/null 2>&1 ||
  fail "synth failed"
cat >config.json <<'JSON'
{"name": "empty", "data": {"path": "kv.safetensors"}, "grid": {"k": ["tq:b=3"], "v": ["tq:b=3"]},
 "metrics": {"attention": {"chunk": 64}, "needle": {"trials": 0}}, "out": "config_out.json"}
JSON
ppl=("$TQLAB" ppl --model "$model" --tokens "$model/windows.npy" --ctx 256 --chunks 1)
expect_refused "ppl -o ''" "--output" "an empty value" -- "${ppl[@]}" -o ''
expect_refused "ppl --k '' --v ''" "--k" "an empty value" -- "${ppl[@]}" --k '' --v ''
expect_refused "ppl --v ''" "--v" "an empty value" -- "${ppl[@]}" --k tq:b=3 --v ''
for option in --out --data --seeds --seed --layers --shard; do
  expect_refused "sweep $option ''" "$option" -- "$TQLAB" sweep --config config.json "$option" ''
done
[ -e config_out.json ] && fail "a refused sweep wrote the config's output"
expect_refused "allocate --candidates ''" "--candidates" "an empty value" -- \
  "$TQLAB" allocate --config config.json --budget 4 -o bad.json --candidates ''
expect_refused "roundtrip input ''" "input" "an empty value" -- "$TQLAB" roundtrip '' --k tq:b=3 --v tq:b=3 -o bad.json
finish
