# tqlab inspect on a file it may not read: exit 2 and one line naming the file and the reason.
# Root ignores file permissions, so run as root this test cannot fail and skips itself.
source "$(dirname "$0")/lib.sh" "$@"
if [ "$(id -u)" = 0 ]; then
  echo "SKIP: running as root, which reads files whatever their permissions"
  exit 77
fi
"$TQLAB" synth -o unreadable.safetensors --layers 1 --kv-heads 1 --q-heads 1 --tokens 4 --dim 8 2>/dev/null ||
  fail "synth could not write the test file"
chmod 000 unreadable.safetensors
expect_exit 2 "no read permission" -- "$TQLAB" inspect unreadable.safetensors
expect_error_line "'unreadable.safetensors'" "Permission denied"
[ -s out.txt ] && fail "inspect printed to stdout although it could not read the file"
chmod 600 unreadable.safetensors
finish
