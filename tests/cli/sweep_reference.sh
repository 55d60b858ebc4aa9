# tqlab sweep against an independent float64 reference (tests/cli/sweep_reference.py, numpy,
# written from docs/SWEEP.md's definitions): every reconstruction and attention metric, per seed,
# their mean, std and cluster standard error, for causal and bidirectional attention, a numeric
# and the default scale, recent and tail windows, sinks, GQA, two sequences, chunks that do not
# divide the tokens and K/V head dims that differ between layers and between K and V. The
# quantized tensors come from `tqlab roundtrip` with the same specs and seeds, so this also pins
# that roundtrip and sweep quantize each slab in the same context.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- *.safetensors *.json *.txt
require_numpy "the reference is numpy"
reference="$(cd "$(dirname "$0")" && pwd)/sweep_reference.py"

"$python" "$reference" make . >make.txt 2>&1 || { echo "FAIL: making the dump: $(tail -3 make.txt)"; exit 1; }
while read -r k v seed out; do
  expect_exit 0 "roundtrip --k $k --v $v --seed $seed" -- \
    "$TQLAB" roundtrip dump.safetensors -o "$out" --k "$k" --v "$v" --seed "$seed"
done < <("$python" "$reference" pairs .)

for name in causal_recent bidirectional_tail causal_tail; do
  expect_exit 0 "sweep $name" -- "$TQLAB" sweep --config "sweep_$name.json" --quiet --threads 2
  checks=$((checks + 1))
  "$python" "$reference" check . "$name" >"check_$name.txt" 2>&1 ||
    fail "sweep $name disagrees with the float64 reference: $(grep -m5 -e MISMATCH -e Error "check_$name.txt")"
  tail -1 "check_$name.txt"
done

finish
