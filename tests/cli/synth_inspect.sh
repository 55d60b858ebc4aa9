# tqlab synth writes KV-like tensors deterministically; inspect reads them back.
source "$(dirname "$0")/lib.sh" "$@"

expect_exit 0 "synth" -- "$TQLAB" synth -o kv.safetensors --layers 3 --kv-heads 2 --q-heads 4 --tokens 64 --dim 32 --seed 5
expect_exit 0 "synth again, same seed" -- "$TQLAB" synth -o kv2.safetensors --layers 3 --kv-heads 2 --q-heads 4 --tokens 64 --dim 32 --seed 5
cmp -s kv.safetensors kv2.safetensors || fail "same seed gave different files"
expect_exit 0 "synth, other seed" -- "$TQLAB" synth -o kv3.safetensors --layers 3 --kv-heads 2 --q-heads 4 --tokens 64 --dim 32 --seed 6
cmp -s kv.safetensors kv3.safetensors && fail "different seeds gave the same file"

expect_exit 0 "inspect synth" -- "$TQLAB" inspect kv.safetensors
expect_contains out.txt "layers.0.k" "layers.2.q" "[2, 64, 32]" "[4, 64, 32]" "|k|/|v|"
[ "$(grep -c '^ *[0-9] ' out.txt)" -ge 3 ] || fail "inspect lists fewer than 3 K/V layers"

expect_exit 0 "inspect --json" -- "$TQLAB" inspect kv.safetensors --json
expect_contains out.txt '"schema": "tqlab.inspect/1"' '"norm_ratio"' '"outlier_channels"'
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import json' 2>/dev/null; then
  /usr/bin/python3 - out.txt <<'PY' || fail "inspect --json does not describe synth's structure"
import json, sys
report = json.load(open(sys.argv[1]))
assert len(report["tensors"]) == 9, len(report["tensors"])
layers = report["kv_layers"]
assert [l["layer"] for l in layers] == [0, 1, 2]
# Key norms 10-30x value norms, the first layer far higher.
assert layers[0]["norm_ratio"] > 40, layers[0]["norm_ratio"]
for l in layers[1:]:
    assert 7 < l["norm_ratio"] < 40, l["norm_ratio"]
# Outlier channels: the largest key channel RMS well above the median, in the
# slowly rotating (low-frequency) RoPE pairs, which are the upper half of the dims.
for l in layers:
    top = l["outlier_channels"]
    assert top[0]["rms"] > 3 * l["median_key_channel_rms"], l
    assert all(t["channel"] >= 16 for t in top[:2]), top
PY
fi

expect_exit 0 "synth npz with seqs" -- "$TQLAB" synth -o kv.npz --layers 1 --kv-heads 1 --q-heads 2 --seqs 2 --tokens 16 --dim 8 --dtype f32
expect_exit 0 "inspect npz" -- "$TQLAB" inspect kv.npz
expect_contains out.txt "[2, 1, 16, 8]" "f32"

expect_exit 2 "synth odd dim" -- "$TQLAB" synth -o bad.safetensors --dim 7
expect_error_line "--dim 7" "even"
[ -e bad.safetensors ] && fail "a failed synth left a file"
expect_exit 2 "synth q heads not a multiple" -- "$TQLAB" synth -o bad.safetensors --kv-heads 3 --q-heads 4
expect_error_line "--q-heads"
expect_exit 2 "synth unknown extension" -- "$TQLAB" synth -o bad.bin --layers 1
expect_error_line "bad.bin"
expect_exit 2 "synth into a missing directory" -- "$TQLAB" synth -o no/such/dir/kv.safetensors --layers 1
expect_error_line "no/such/dir/kv.safetensors"
finish
