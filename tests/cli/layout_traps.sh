# Layout and output-format traps, through `tqlab roundtrip`:
# - a --layout that contradicts the file's `layout` metadata is used, with a
#   warning naming both;
# - a 4-axis tensor read with a 3-axis layout is refused with a hint at
#   "batch head token dim";
# - a 3-axis file without layout metadata whose "heads" axis is longer than its
#   "tokens" axis is read as "head token dim" with a warning (likely "token head dim");
# - roundtrip --help says what -o accepts, and why not .npy (one tensor per file).
source "$(dirname "$0")/lib.sh" "$@"
rm -f -- *.safetensors *.npz *.npy *.txt

"$TQLAB" synth -o kv.safetensors --layers 1 --kv-heads 2 --q-heads 2 --tokens 64 --dim 32 2>/dev/null ||
  fail "synth of the test file failed"

# ---------------------------------------------------------------- layouts
# kv.safetensors says layout "head token dim" in its metadata.
expect_exit 0 "--layout contradicting the metadata" -- \
  "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 -o flipped.safetensors --layout "token head dim"
expect_contains err.txt "warning" "--layout 'token head dim'" "layout metadata 'head token dim'"
expect_exit 0 "--layout agreeing with the metadata, spaced otherwise" -- \
  "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 -o same.safetensors --layout " head  token dim"
grep -q "warning" err.txt && fail "a --layout equal to the metadata warned: $(cat err.txt)"

# npz files carry no metadata.
"$TQLAB" synth -o seqs.npz --layers 1 --kv-heads 2 --q-heads 2 --tokens 16 --dim 32 --seqs 2 2>/dev/null ||
  fail "synth of seqs.npz failed"
expect_exit 2 "4-axis tensors, default 3-axis layout" -- "$TQLAB" roundtrip seqs.npz --k tq:b=3 --v tq:b=3 -o o.npz
expect_error_line "'seqs.npz'" "layers.0.k" "[2, 2, 16, 32]" "batch head token dim"

"$TQLAB" synth -o wide.npz --layers 1 --kv-heads 8 --q-heads 8 --tokens 4 --dim 32 2>/dev/null ||
  fail "synth of wide.npz failed"
expect_exit 0 "more heads than tokens, no layout metadata" -- \
  "$TQLAB" roundtrip wide.npz --k tq:b=3 --v tq:b=3 -o wide_out.npz
expect_contains err.txt "warning" "'wide.npz'" "layers.0.k" "8 heads of 4 tokens" "token head dim"
expect_exit 0 "more heads than tokens, layout named" -- \
  "$TQLAB" roundtrip wide.npz --k tq:b=3 --v tq:b=3 -o wide_out.npz --layout "head token dim"
grep -q "warning" err.txt && fail "a named layout still warned about heads and tokens: $(cat err.txt)"
"$TQLAB" synth -o tall.npz --layers 1 --kv-heads 2 --q-heads 2 --tokens 16 --dim 32 2>/dev/null
expect_exit 0 "fewer heads than tokens, no layout metadata" -- \
  "$TQLAB" roundtrip tall.npz --k tq:b=3 --v tq:b=3 -o tall_out.npz
grep -q "warning" err.txt && fail "fewer heads than tokens warned: $(cat err.txt)"

# ---------------------------------------------------------------- roundtrip -o
expect_exit 0 "roundtrip --help" -- "$TQLAB" roundtrip --help
expect_contains out.txt ".safetensors" ".npz" ".npy"
expect_exit 2 "roundtrip -o x.npy" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 -o x.npy
expect_error_line "'x.npy'" "one tensor" ".npz or .safetensors"

finish
