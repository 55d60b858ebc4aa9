# tqlab tokenize end to end on the repository's byte-per-token tokenizer (the bundled sample
# model's: id = byte value), and every bad input of the tokenizer: exit 2 with exactly one stderr
# line naming the file and what is wrong, nothing half-written.
#
# Decisions pinned here:
# - Ids go to stdout as one line of decimal ids, or with -o to .npy/.npz/.safetensors as int32
#   ("input_ids"); --decode reads either back, and gives the bytes back exactly (not U+FFFD).
# - An empty text is an error (there is nothing to tokenize), not an empty array.
# - A text that is not UTF-8 is taken by byte-level tokenizers (bytes are bytes) and by those
#   with a byte-fallback token for every byte; any other tokenizer refuses it, naming the offset.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
bytes_tokenizer="$repo/tests/data/tokenizers/byte_per_token"
python=/usr/bin/python3
if [ ! -x "$python" ]; then
  echo "SKIP: $python is absent (the bad tokenizer files are written with its standard library)"
  exit 77
fi

# ---------------------------------------------------------------------------------- what works
printf 'caf\xc3\xa9 \xff\x00\xfe\r\n\tend' > text.bin
expected=$(od -An -v -tu1 text.bin | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
expect_exit 0 "encode with the byte-per-token tokenizer" -- "$TQLAB" tokenize --tokenizer "$bytes_tokenizer" --text text.bin
[ "$(cat out.txt)" = "$expected" ] || fail "ids are not the byte values: '$(cat out.txt)' vs '$expected'"
[ -s err.txt ] && fail "encode wrote to stderr: $(head -2 err.txt)"

expect_exit 0 "encode to npy" -- "$TQLAB" tokenize --tokenizer "$bytes_tokenizer/tokenizer.json" --text text.bin -o ids.npy
expect_exit 0 "inspect the ids" -- "$TQLAB" inspect ids.npy
expect_contains out.txt "i32" "[15]"
expect_exit 0 "decode the npy" -- "$TQLAB" tokenize --tokenizer "$bytes_tokenizer" --decode ids.npy -o back.bin
cmp -s back.bin text.bin || fail "--decode ids.npy did not give the bytes back"
printf '%s\n' "$expected" > ids.txt
expect_exit 0 "decode a list of ids" -- "$TQLAB" tokenize --tokenizer "$bytes_tokenizer" --decode ids.txt
cmp -s out.txt text.bin || fail "--decode ids.txt did not give the bytes back on stdout"

expect_exit 0 "encode with --json" -- "$TQLAB" tokenize --tokenizer "$bytes_tokenizer" --text text.bin --json --no-add-special
expect_contains out.txt '"schema": "tqlab.tokenize/1"' '"token_count": 15' '"add_special_tokens": false' '"ids": [' \
  "\"sha256\": \"$(sha256sum text.bin | cut -d' ' -f1)\"" \
  "\"sha256\": \"$(sha256sum "$bytes_tokenizer/tokenizer.json" | cut -d' ' -f1)\""

expect_exit 0 "help" -- "$TQLAB" tokenize --help
expect_contains out.txt "docs/REFERENCE.md#tqlab-tokenize"

# ---------------------------------------------------------------------------------- bad input
# Variants of the byte-per-token file, and a SentencePiece-style file without byte fallback.
"$python" - "$bytes_tokenizer/tokenizer.json" <<'PYEOF'
import json, sys
source = open(sys.argv[1], encoding="utf-8").read()
document = json.loads(source)
def write(name, value):
    with open(name, "w", encoding="utf-8") as out:
        out.write(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
write("malformed.json", "{ this is not json")
write("truncated.json", source[: len(source) // 2])
unknown_merge = json.loads(source)
unknown_merge["model"]["merges"] = ["\u0120 zz"]
write("unknown_merge.json", unknown_merge)
unigram = json.loads(source)
unigram["model"]["type"] = "Unigram"
write("unigram.json", unigram)
pre_tokenizer = json.loads(source)
pre_tokenizer["pre_tokenizer"] = {"type": "Whitespace"}
write("whitespace.json", pre_tokenizer)
vocab = {"<unk>": 0, "\u2581": 1}
for i, c in enumerate("abcdefghijklmnopqrstuvwxyz"):
    vocab[c] = 2 + i
write("no_fallback.json", {
    "version": "1.0", "added_tokens": [],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
    "pre_tokenizer": None, "post_processor": None, "decoder": None,
    "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": False, "vocab": vocab, "merges": []}})
# A float tensor where ids are expected: npy 1.0, '<f4', shape (2,).
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
header += " " * (63 - len(header)) + "\n"
with open("floats.npy", "wb") as out:
    out.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\x00" * 8)
PYEOF
printf 'hello world' > hello.txt
printf 'caf\xe9' > latin1.txt
: > empty.txt
mkdir -p empty_folder


expect_refused "malformed tokenizer.json" "'malformed.json'" -- "$TQLAB" tokenize --tokenizer malformed.json --text hello.txt
expect_refused "truncated tokenizer.json" "'truncated.json'" -- "$TQLAB" tokenize --tokenizer truncated.json --text hello.txt
expect_refused "merges naming unknown tokens" "'unknown_merge.json'" "model.merges" "'zz'" "not in model.vocab" -- \
  "$TQLAB" tokenize --tokenizer unknown_merge.json --text hello.txt
expect_refused "unsupported model type" "'unigram.json'" "model.type" "'Unigram' is not supported (supported: BPE)" -- \
  "$TQLAB" tokenize --tokenizer unigram.json --text hello.txt
expect_refused "unsupported pre-tokenizer" "'whitespace.json'" "pre_tokenizer.type" "'Whitespace' is not supported" -- \
  "$TQLAB" tokenize --tokenizer whitespace.json --text hello.txt
expect_refused "folder without tokenizer.json" "'empty_folder'" "holds no tokenizer.json" -- \
  "$TQLAB" tokenize --tokenizer empty_folder --text hello.txt
expect_refused "missing tokenizer file" "'absent.json'" -- "$TQLAB" tokenize --tokenizer absent.json --text hello.txt
expect_refused "empty text" "'empty.txt'" "is empty" -- "$TQLAB" tokenize --tokenizer "$bytes_tokenizer" --text empty.txt
expect_refused "missing text" "'absent.txt'" -- "$TQLAB" tokenize --tokenizer "$bytes_tokenizer" --text absent.txt
expect_refused "non-UTF-8 text, no byte fallback" "'latin1.txt'" "not UTF-8" "offset 3" "'no_fallback.json'" \
  "byte_fallback" -- "$TQLAB" tokenize --tokenizer no_fallback.json --text latin1.txt
expect_exit 0 "the same tokenizer takes UTF-8" -- "$TQLAB" tokenize --tokenizer no_fallback.json --text hello.txt
printf '1 2 300\n' > out_of_range.txt
expect_refused "id beyond the vocabulary" "'out_of_range.txt'" "id 300 (at position 2)" -- \
  "$TQLAB" tokenize --tokenizer "$bytes_tokenizer" --decode out_of_range.txt
printf '1 2 x3\n' > not_ids.txt
expect_refused "ids file that is not ids" "'not_ids.txt'" "byte offset 4" -- \
  "$TQLAB" tokenize --tokenizer "$bytes_tokenizer" --decode not_ids.txt
expect_refused "float tensor to decode" "'floats.npy'" "expected integer token ids" -- \
  "$TQLAB" tokenize --tokenizer "$bytes_tokenizer" --decode floats.npy
expect_refused "neither --text nor --decode" "exactly one of --text" -- "$TQLAB" tokenize --tokenizer "$bytes_tokenizer"
expect_refused "-o with a text extension" "must end in .npy" -- \
  "$TQLAB" tokenize --tokenizer "$bytes_tokenizer" --text hello.txt -o ids.txt
expect_refused "-o over the input" "is the ids file" -- \
  "$TQLAB" tokenize --tokenizer "$bytes_tokenizer" --decode ids.txt -o ids.txt
[ -e ids.txt ] || fail "the refused -o removed the input"
ls ./*.tmp-* >/dev/null 2>&1 && fail "a temporary file was left behind: $(ls ./*.tmp-*)"
finish
