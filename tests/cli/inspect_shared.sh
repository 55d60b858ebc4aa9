# tqlab inspect on the real dump from a small trained Llama (the shared data folder the tests are given).
source "$(dirname "$0")/lib.sh" "$@"
dump="$SHARED_DATA/stories260k_qkv.safetensors"
if [ ! -f "$dump" ]; then
  echo "SKIP: $dump is absent"
  exit 77
fi
expect_exit 0 "inspect real dump" -- "$TQLAB" inspect "$dump"
[ "$(grep -c '^layers\.[0-4]\.[qkv] ' out.txt)" = 15 ] || fail "expected 15 tensors listed"
expect_contains out.txt "(safetensors, 15 tensors)" "layout: seq head token dim" "[4, 8, 256, 8]" "[4, 4, 256, 8]"
[ "$(grep -cE '^ +[0-4] +[0-9.]+ +[0-9.]+ +[0-9.]+ ' out.txt)" = 5 ] || fail "expected 5 per-layer K/V norm rows"
expect_exit 0 "inspect real dump --json" -- "$TQLAB" inspect "$dump" --json
expect_contains out.txt '"nonfinite": 0' '"layer": 4'
finish
