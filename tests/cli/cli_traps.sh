# Command-line traps, through the real binary:
# - a negative --seed is refused (exit 2, one line) by every command that takes one,
#   instead of wrapping to 2^64 - 1;
# - the exit codes, 3 (internal error) included, are documented in `tqlab --help`;
# - running out of memory says so, names the command, and is not worded as a
#   defect of the input (exit 2, documented).
source "$(dirname "$0")/lib.sh" "$@"
rm -f -- *.safetensors *.npz *.npy *.txt

# ---------------------------------------------------------------- --seed
"$TQLAB" synth -o kv.safetensors --layers 1 --kv-heads 2 --q-heads 2 --tokens 64 --dim 32 2>/dev/null ||
  fail "synth of the test file failed"
seed_refused() {
  local description=$1
  shift
  rm -f neg.safetensors
  expect_exit 2 "$description --seed -1" -- "$@" --seed -1
  expect_error_line "--seed" "-1" "non-negative"
  [ -e neg.safetensors ] && fail "$description --seed -1 wrote its output"
}
seed_refused "synth" "$TQLAB" synth -o neg.safetensors --layers 1 --tokens 8 --dim 32
seed_refused "roundtrip" "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 -o neg.safetensors
seed_refused "verify-bounds" "$TQLAB" verify-bounds --dims 8 --bits 1 --samples 100
expect_exit 0 "synth --seed 18446744073709551615 (2^64 - 1 is a seed)" -- \
  "$TQLAB" synth -o max.safetensors --layers 1 --tokens 8 --dim 32 --seed 18446744073709551615

# ---------------------------------------------------------------- exit codes
expect_exit 0 "--help" -- "$TQLAB" --help
expect_contains out.txt "0 success" "1 checked and found a difference" "2 usage or input error" \
  "3 internal error"

# ---------------------------------------------------------------- out of memory
# (Run by an inner bash that does not exec it, so that bash's "Aborted" goes to /dev/null.)
if bash -c 'ulimit -v 500000 && "$0" --version; exit $?' "$TQLAB" >/dev/null 2>&1; then
  # 1 layer x 192 heads x 20000 tokens x 128 dims: 2 GB of floats, under synth's own limit.
  expect_exit 2 "synth beyond 500 MB of address space" -- \
    bash -c 'ulimit -v 500000 && exec "$0" synth -o big.safetensors --layers 1 --kv-heads 64 --q-heads 64 \
      --tokens 20000 --dim 128' "$TQLAB"
  expect_error_line "out of memory while running tqlab synth" "not a defect of the input"
  [ -e big.safetensors ] && fail "synth out of memory left big.safetensors behind"
else
  echo "note: $TQLAB cannot start under ulimit -v 500000 (sanitizer build?); out of memory not checked"
fi

finish
