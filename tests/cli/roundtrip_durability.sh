# tqlab roundtrip renames its output into place complete; it fsyncs it first
# only with --fsync.
# Counted with strace: skipped when strace is missing or cannot trace here.
source "$(dirname "$0")/lib.sh" "$@"
rm -f -- *.safetensors *.txt *.tmp-*

if ! command -v strace >/dev/null || ! strace -f -qq -o /dev/null true 2>/dev/null; then
  echo "SKIP: strace is needed (Debian: strace) and must be allowed to trace here"
  exit 77
fi

# syncs_of TRACE: the fsync/fdatasync/sync_file_range calls strace saw, one per line.
syncs_of() { grep -E '(fsync|fdatasync|sync_file_range)\(' "$1"; }
# The calls to trace, as a regular expression: rename is renameat or renameat2 on some
# architectures (aarch64), and strace refuses a name the architecture lacks.
calls='/^(fsync|fdatasync|sync_file_range|rename|renameat|renameat2)$'
# LeakSanitizer cannot run under ptrace: in the sanitizer build the traced runs go without
# it (the other roundtrip tests check for leaks).
no_leak_check="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

expect_exit 0 "synth" -- "$TQLAB" synth -o kv.safetensors --layers 2 --tokens 512 --dim 64

expect_exit 0 "roundtrip" -- env ASAN_OPTIONS="$no_leak_check" strace -f -qq -e trace="$calls" -o trace.txt \
  "$TQLAB" roundtrip kv.safetensors -o out.safetensors --k tq:b=3 --v tq:b=4 --threads 2 --quiet
[ -s out.safetensors ] || fail "roundtrip wrote no output"
grep -Eq 'rename(at2?)?\(.*out\.safetensors\.tmp-' trace.txt || fail "the output was not renamed into place: $(cat trace.txt)"
[ -z "$(syncs_of trace.txt)" ] || fail "roundtrip without --fsync synced: $(syncs_of trace.txt)"
cp out.safetensors plain.safetensors

expect_exit 0 "roundtrip --fsync" -- env ASAN_OPTIONS="$no_leak_check" strace -f -qq -e trace="$calls" -o trace.txt \
  "$TQLAB" roundtrip kv.safetensors -o out.safetensors --k tq:b=3 --v tq:b=4 --threads 2 --quiet --fsync
[ "$(grep -c 'fsync(' trace.txt)" = 1 ] || fail "roundtrip --fsync did not fsync once: $(cat trace.txt)"
# The fsync comes before the rename: a file under its name is on disk.
[ "$(grep -E -m1 -o 'fsync|rename' trace.txt)" = fsync ] || fail "rename before fsync: $(cat trace.txt)"
cmp -s out.safetensors plain.safetensors || fail "--fsync changed the output bytes"

expect_exit 0 "roundtrip --help" -- "$TQLAB" roundtrip --help
expect_contains out.txt "--fsync" "power"

finish
