# The one integer reader (core/decimal.h, docs/RELIABILITY.md#integers) behind every integer option:
# decimal whatever the text looks like (leading zeros are decimal, never octal: --ctx 0100 is 100,
# --chunks 02 is 2, --threads 08 is 8, a seed written 010 is seed 10 in every command), and a text that is no
# decimal integer, or one beyond the option's range (never clamped), is exit 2 naming the option.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
model="$repo/data/tinyllama_hf"
rm -f -- *.json *.txt *.safetensors

expect_exit 0 "ppl --ctx 0100 --chunks 02 --threads 08" -- \
  "$TQLAB" ppl --model "$model" --tokens "$model/windows.npy" --ctx 0100 --chunks 02 --threads 08 --quiet
expect_contains out.txt "2 chunks of 100 tokens"
"$TQLAB" synth -o kv.safetensors --layers 02 --kv-heads 01 --q-heads 02 --tokens 064 --dim 064 >/dev/null 2>&1 ||
  fail "synth with leading zeros failed"
expect_exit 0 "inspect" -- "$TQLAB" inspect kv.safetensors --outliers 02
expect_contains out.txt "[1, 64, 64]"
expect_exit 0 "roundtrip --seed 010" -- \
  "$TQLAB" roundtrip kv.safetensors --k tq:b=03 --v tq:b=3 --seed 010 --layers 00,01 -o seed010.safetensors --quiet
expect_exit 0 "roundtrip --seed 10" -- \
  "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 --seed 10 -o seed10.safetensors --quiet
expect_exit 0 "roundtrip --seed 8" -- \
  "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 --seed 8 -o seed8.safetensors --quiet
checks=$((checks + 1))
cmp -s seed010.safetensors seed10.safetensors || fail "roundtrip --seed 010 is not --seed 10"
cmp -s seed010.safetensors seed8.safetensors && fail "roundtrip --seed 010 is seed 8 (octal)"
expect_exit 0 "codebook export --dims 064 --bits 02" -- "$TQLAB" codebook export --dims 064 --bits 02
expect_contains out.txt '"dim": 64'

ppl=("$TQLAB" ppl --model "$model" --tokens "$model/windows.npy")
expect_refused "--ctx 0x10" "--ctx" "'0x10' is not a decimal integer" -- "${ppl[@]}" --ctx 0x10
expect_refused "--ctx +64" "--ctx" "not a decimal integer" -- "${ppl[@]}" --ctx +64
expect_refused "--ctx 99999999999" "--ctx" "99999999999 is out of range" -- "${ppl[@]}" --ctx 99999999999
expect_refused "--chunks 1e3" "--chunks" "not a decimal integer" -- "${ppl[@]}" --chunks 1e3
expect_refused "--threads 0x8" "--threads" "not a decimal integer" -- "${ppl[@]}" --threads 0x8
expect_refused "--threads 999999" "--threads" "out of range (expected 0..65536)" -- "${ppl[@]}" --threads 999999
expect_refused "roundtrip --seed beyond 2^64" "--seed" "'99999999999999999999999' is not a seed" -- \
  "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 --seed 99999999999999999999999 -o bad.json
expect_refused "sweep --seed -1" "--seed" "not a seed" -- "$TQLAB" sweep --config none.json --seed -1
expect_refused "synth --dim 1e3" "--dim" "not a decimal integer" -- "$TQLAB" synth -o bad.json --dim 1e3
expect_refused "verify-bounds --samples 2^63" "--samples" "out of range" -- \
  "$TQLAB" verify-bounds --samples 9223372036854775808
expect_refused "codebook export --bits 0x2" "--bits" "not a decimal integer" -- \
  "$TQLAB" codebook export --dims 64 --bits 0x2
finish
