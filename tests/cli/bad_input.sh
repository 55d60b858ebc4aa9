# Every bad input of the Foundation issue, end to end through the real binary: `tqlab inspect`
# on each broken file exits 2 within 10 s and prints exactly one stderr line that names the file,
# the tensor (where one is involved) and what was wrong; nothing on stdout, no crash, no hang.
# Files declaring 2 GiB in ~1 kB are also opened under `ulimit -v 500000`, which a reader that
# allocated the declared size before validating would not survive with the right message.
# The broken files come from tools/make_bad_inputs.py (python3 standard library only).
#
# Decisions pinned here:
# - An empty tensor ([0]) and a zero-length axis ([2, 0, 8]) are valid tensors: inspect lists
#   them with count 0 and exits 0 (numpy and safetensors both write such files). A K/V pair of
#   zero tokens gets its row with no outlier channels. A file with no tensors is listed as such.
# - NaN/Inf values are data, not a malformed file: inspect prints the whole table (the
#   non-finite count in its column) and then exits 2 with one line naming the tensor and count.
# - Raw 2-byte npy values ('|V2', bfloat16 bits) need --bf16; without it, exit 2 saying so.
#   '<u2' is an unsigned 16-bit tensor (listed as u16), or bfloat16 with --bf16.
# - A stored .npz member's CRC is not checked (npz.h: that would read every page at open);
#   deflated members' CRCs are.
source "$(dirname "$0")/lib.sh" "$@"

python=/usr/bin/python3
if [ ! -x "$python" ]; then
  echo "SKIP: $python is absent (the bad-input generator needs its standard library)"
  exit 77
fi
generator="$(cd "$(dirname "$0")/../../tools" && pwd)/make_bad_inputs.py"
"$python" "$generator" . || { echo "FAIL: $generator failed"; exit 1; }

# Whether the binary starts at all with 500 MB of address space (an ASan build reserves
# terabytes of shadow memory and cannot): only then is the memory bound testable.
memory_bound=1
# (Run by an inner bash that does not exec it, so that bash's "Aborted" goes to /dev/null.)
if ! bash -c 'ulimit -v 500000 && "$0" --version; exit $?' "$TQLAB" >/dev/null 2>&1; then
  memory_bound=0
  echo "note: $TQLAB cannot start under ulimit -v 500000 (sanitizer build?); memory bound not checked"
fi

# rejected FILE NEEDLE...: inspect FILE exits 2 within 10 s, prints nothing on stdout and one
# stderr line holding 'FILE' and every NEEDLE.
rejected() {
  local file=$1
  shift
  expect_exit 2 "inspect $file" -- timeout 10 "$TQLAB" inspect "$file"
  expect_error_line "'$file'" "$@"
  [ -s out.txt ] && fail "inspect $file rejected the file but printed to stdout: $(head -2 out.txt)"
}

# rejected_in_bounded_memory FILE NEEDLE...: as rejected, also under ulimit -v 500000. A reader
# that allocated the declared 2 GiB would die or report "out of memory" instead of the defect.
rejected_in_bounded_memory() {
  rejected "$@"
  [ "$memory_bound" = 1 ] || return 0
  local file=$1
  shift
  expect_exit 2 "inspect $file in 500 MB" -- \
    bash -c 'ulimit -v 500000 && exec timeout 10 "$0" inspect "$1"' "$TQLAB" "$file"
  expect_error_line "'$file'" "$@"
  grep -q "out of memory" err.txt && fail "inspect $file ran out of memory: it allocated the declared size"
}

# accepted FILE NEEDLE...: inspect FILE exits 0 and its table holds every NEEDLE.
accepted() {
  local file=$1
  shift
  expect_exit 0 "inspect $file" -- timeout 10 "$TQLAB" inspect "$file"
  expect_contains out.txt "$@"
  [ -s err.txt ] && fail "inspect $file succeeded but wrote to stderr: $(head -2 err.txt)"
}

# --- The generator's valid files open: each bad file below differs from these by its defect.
accepted ok.safetensors "(safetensors, 2 tensors)" "layers.0.k" "[2, 4, 8]"
accepted ok.npy "(npy, 1 tensors)" "[4, 8]"
accepted ok.npz "(npz, 2 tensors)" "layers.0.v"

# --- Files that cannot be read at all.
expect_exit 2 "file not found" -- "$TQLAB" inspect missing.safetensors
expect_error_line "'missing.safetensors'" "No such file"
mkdir -p a_directory.safetensors
expect_exit 2 "directory instead of file" -- "$TQLAB" inspect a_directory.safetensors
expect_error_line "'a_directory.safetensors'" "is a directory"
: >empty.safetensors
rejected empty.safetensors "is empty"
# (No read permission: tests/cli/bad_input_permission.sh, which skips itself when run as root.)

# --- safetensors.
rejected st_truncated_data.safetensors "tensor 'layers.0.k'" "past the end of the 100-byte data buffer" "truncated"
rejected st_truncated_header.safetensors "header length 208" "past the end of the 196-byte file"
rejected st_truncated_length.safetensors "5 bytes are too few for a safetensors file"
rejected st_header_length_past_eof.safetensors "header length 100000" "past the end"
rejected st_bad_json.safetensors "header" "not valid JSON"
rejected st_header_not_object.safetensors "JSON object" "byte 8 is '['"
rejected st_overlap.safetensors "'layers.0.k'" "'layers.0.v'" "overlap"
rejected st_offsets_out_of_range.safetensors "tensor 'layers.0.k'" "[64, 128]" "past the end"
rejected st_offsets_reversed.safetensors "tensor 'layers.0.k'" "[64, 0]" "begin after they end"
rejected st_shape_mismatch.safetensors "tensor 'layers.0.k'" "[4, 16]" "needs 128 bytes" "span 64"
rejected st_unsupported_dtype.safetensors "tensor 'layers.0.k'" "unsupported dtype 'C64'" "BOOL, U8, I8"
rejected st_negative_extent.safetensors "tensor 'layers.0.k'" "-4" "non-negative"
rejected st_shape_overflow.safetensors "tensor 'layers.0.k'" "too large"
rejected_in_bounded_memory st_2gb_shape.safetensors "tensor 'layers.0.k'" "[0, 2147483648]" "past the end"

# --- .npy (a .npy file's one tensor is named after the file).
rejected npy_truncated.npy "tensor 'npy_truncated'" "needs 64 data bytes" "54 follow" "truncated"
rejected npy_header_length_past_eof.npy "tensor 'npy_header_length_past_eof'" "header length 65535" "past the end"
rejected npy_bad_magic.npy "magic bytes \\x93NUMPY" "93 4e 55 4d 50 58"
rejected npy_header_not_dict.npy "tensor 'npy_header_not_dict'" "header is not a dict"
rejected npy_header_malformed.npy "tensor 'npy_header_malformed'" "not a valid Python literal"
# Fortran/C confusion: an order that is neither, no order at all, Fortran data too short.
rejected npy_fortran_maybe.npy "tensor 'npy_fortran_maybe'" "'fortran_order' is 'maybe', expected True or False"
rejected npy_fortran_missing.npy "tensor 'npy_fortran_missing'" "'fortran_order'" "expected exactly"
rejected npy_fortran_short.npy "tensor 'npy_fortran_short'" "(8, 8)" "needs 128 data bytes" "64 follow"
rejected npy_unsupported_dtype.npy "tensor 'npy_unsupported_dtype'" "unsupported dtype '<c8'"
rejected npy_raw16.npy "tensor 'npy_raw16'" "raw 2-byte values" "|V2" "--bf16"
expect_exit 0 "inspect --bf16 reads raw 2-byte values" -- "$TQLAB" inspect npy_raw16.npy --bf16
expect_contains out.txt "bf16" "[4, 8]"
accepted npy_u16.npy "[4, 8]"
grep -qE '^npy_u16 +u16 +\[4, 8\] +32 +0 ' out.txt || fail "'<u2' is not listed as a u16 tensor: $(cat out.txt)"
expect_exit 0 "inspect --bf16 reads '<u2' as bfloat16" -- "$TQLAB" inspect npy_u16.npy --bf16
grep -qE '^npy_u16 +bf16 +\[4, 8\] +32 +0 ' out.txt || fail "--bf16 does not read '<u2' as bf16: $(cat out.txt)"
rejected_in_bounded_memory npy_2gb_shape.npy "tensor 'npy_2gb_shape'" "(1024, 1024, 1024)" "2147483648"

# --- .npz (members are NAME.npy; messages name the archive, the member and the tensor).
rejected npz_truncated.npz "end-of-central-directory" "truncated"
rejected npz_crc_mismatch.npz "member 'layers.0.k.npy'" "CRC-32 mismatch"
rejected npz_bomb.npz "member 'layers.0.k.npy'" "inflates to more than the 192 bytes it declares"
rejected_in_bounded_memory npz_bomb_ratio.npz "member 'layers.0.k.npy'" "2147483776 bytes" "decompression bomb"
rejected_in_bounded_memory npz_2gb_shape.npz "member 'layers.0.k.npy'" "tensor 'layers.0.k'" "2147483648"
rejected npz_member_bad_magic.npz "member 'layers.0.k.npy'" "tensor 'layers.0.k'" "\\x93NUMPY"
rejected npz_member_not_dict.npz "member 'layers.0.k.npy'" "tensor 'layers.0.k'" "not a dict"
rejected npz_member_fortran_maybe.npz "member 'layers.0.k.npy'" "'fortran_order' is 'maybe'"
rejected npz_member_not_npy.npz "member 'notes.txt'" "not a .npy array"

# --- NaN/Inf: the full table with the count, then exit 2 and one line naming tensor and count.
expect_exit 2 "inspect non-finite safetensors" -- "$TQLAB" inspect st_nonfinite.safetensors
expect_error_line "'st_nonfinite.safetensors'" "tensor 'layers.0.k'" "3 non-finite values" "of 64"
grep -qE '^layers\.0\.k +f16 +\[2, 4, 8\] +64 +3 ' out.txt || fail "table lacks layers.0.k with 64 values, 3 non-finite"
grep -qE '^layers\.0\.v +f16 +\[2, 4, 8\] +64 +0 ' out.txt || fail "table lacks the finite layers.0.v"
grep -qE '^ +0 ' out.txt || fail "table lacks the K/V row of layer 0"
expect_exit 2 "inspect --json non-finite" -- "$TQLAB" inspect st_nonfinite.safetensors --json
expect_contains out.txt '"nonfinite": 3' '"count": 64'
expect_error_line "tensor 'layers.0.k'" "3 non-finite"
expect_exit 2 "inspect non-finite npy" -- "$TQLAB" inspect npy_nonfinite.npy
expect_error_line "'npy_nonfinite.npy'" "tensor 'npy_nonfinite'" "2 non-finite values" "of 32"
grep -qE '^npy_nonfinite +f16 +\[4, 8\] +32 +2 ' out.txt || fail "table lacks npy_nonfinite with 32 values, 2 non-finite"

# --- Empty tensors are valid: listed with count 0, exit 0.
accepted st_zero_axis.safetensors "[2, 0, 8]"
[ "$(grep -cE '^layers\.0\.[kv] +f16 +\[2, 0, 8\] +0 +0 ' out.txt)" = 2 ] || fail "zero-token K/V not listed with count 0"
grep -qE '^ +0 +0 +0 +0\.00 +0 *$' out.txt || fail "zero-token layer row should hold zeros and no outlier channels"
expect_exit 0 "inspect --json zero-length axis" -- "$TQLAB" inspect st_zero_axis.safetensors --json
expect_contains out.txt '"count": 0' '"outlier_channels": []'
accepted st_empty_tensor.safetensors "(safetensors, 2 tensors)"
grep -qE '^empty +f32 +\[0\] +0 +0 ' out.txt || fail "empty [0] tensor not listed with count 0"
accepted st_no_tensors.safetensors "(safetensors, 0 tensors)"
accepted npy_empty.npy "[0]"
grep -qE '^npy_empty +f16 +\[0\] +0 +0 ' out.txt || fail "empty npy not listed with count 0"
accepted npy_zero_axis.npy "[3, 0, 8]"

# --- Bad command-line usage: exit 2 and one line saying what was wrong.
expect_exit 2 "unknown command" -- "$TQLAB" inspekt ok.npy
expect_error_line "unknown command 'inspekt'" "inspect"
expect_exit 2 "no command" -- "$TQLAB"
expect_error_line "a command is required"
expect_exit 2 "unknown option" -- "$TQLAB" inspect --nope ok.npy
expect_error_line "tqlab inspect" "--nope"
expect_exit 2 "missing file argument" -- "$TQLAB" inspect
expect_error_line "tqlab inspect" "file is required"
expect_exit 2 "missing option value" -- "$TQLAB" inspect ok.npy --outliers
expect_error_line "tqlab inspect" "--outliers"
expect_exit 2 "option value out of range" -- "$TQLAB" inspect ok.npy --outliers 99999
expect_error_line "tqlab inspect" "--outliers" "99999"
expect_exit 0 "inspect --help" -- "$TQLAB" inspect --help
expect_contains out.txt "Usage: tqlab inspect" "--outliers" "=4" "Exit 2"
finish
