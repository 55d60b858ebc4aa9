# Names and strings from files are bytes a stranger chose: not UTF-8, newlines, terminal
# escapes, bidirectional overrides, 100 kB. Through the real binary, every command that echoes
# them (inspect's table and --json, roundtrip, the missing-template error, sweep's results):
# messages are one line of at most a few hundred bytes, valid UTF-8, with such bytes escaped
# (\xNN, \n, \u202E, src/core/text.h); JSON is valid and holds valid UTF-8 names exactly as the
# file has them; copies keep every name byte for byte. Files: tools/make_bad_inputs.py (name_*).
#
# Decisions pinned here:
# - A safetensors header that is not UTF-8 is refused (exit 2), as the format and its reference
#   implementation require; the message says where the stray byte is.
# - .npz member names and .npy file names are bytes: accepted, shown escaped, copied as they are;
#   writing such a name into safetensors (UTF-8 JSON) is refused naming it.
source "$(dirname "$0")/lib.sh" "$@"

python=/usr/bin/python3
[ -x "$python" ] || { echo "SKIP: $python is absent (the files are made and checked with it)"; exit 77; }
"$python" "$(cd "$(dirname "$0")/../../tools" && pwd)/make_bad_inputs.py" . || { echo "FAIL: generator"; exit 1; }

# clean_stream FILE MAX: FILE is valid UTF-8, holds no control character but newlines and no
# line longer than MAX bytes.
clean_stream() {
  "$python" - "$1" "$2" <<'PY' || fail "$1 is not clean: $(head -c 300 "$1")"
import sys
data = open(sys.argv[1], "rb").read()
text = data.decode("utf-8")
bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029\u202e"]
assert not bad, f"control characters {bad[:5]!r}"
longest = max((len(line) for line in data.split(b"\n")), default=0)
assert longest <= int(sys.argv[2]), f"a line of {longest} bytes"
PY
}

# one_clean_line NEEDLE...: stderr is one clean line of at most 600 bytes holding every NEEDLE.
one_clean_line() {
  expect_error_line "$@"
  clean_stream err.txt 600
}

# ------------------------------------------------- a safetensors header that is not UTF-8
for command in "inspect" "inspect --json" "roundtrip --k tq:b=4 --v tq:b=4 -o out.safetensors"; do
  # shellcheck disable=SC2086  # the command's words split on purpose
  expect_exit 2 "$command name_not_utf8.safetensors" -- "$TQLAB" $command name_not_utf8.safetensors
  one_clean_line "'name_not_utf8.safetensors'" "not UTF-8" "byte 0xFE" 'after "{"__metadata__": {"note"'
  [ -s out.txt ] && fail "$command printed to stdout for a refused file"
done
[ -e out.safetensors ] && fail "roundtrip left an output behind"

# ------------------------------------------------- a 100 kB name, newlines, escapes, bidi
expect_exit 0 "inspect name_long.safetensors" -- "$TQLAB" inspect name_long.safetensors
clean_stream out.txt 400
expect_contains out.txt 'two\nlines' '\x1B[31mred' 'tab\there' '\u202Etxt.exe' "model.layers.0.xxx" "bytes cut]" \
  "note: first line\nsecond line"
[ -s err.txt ] && fail "inspect wrote to stderr: $(head -c 300 err.txt)"

expect_exit 0 "inspect --json name_long.safetensors" -- "$TQLAB" inspect --json name_long.safetensors
"$python" - out.txt <<'PY' || fail "inspect --json does not hold the names exactly"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
names = {t["name"] for t in d["tensors"]}
want = {"layers.0.k", "layers.0.v", "model.layers.0." + "x" * 100000 + ".ids",
        "two\nlines", "\x1b[31mred", "tab\there", "\u202etxt.exe"}
assert names == want, sorted(n[:40] for n in names ^ want)
assert d["metadata"]["note"] == "first line\nsecond line"
ids = [t for t in d["tensors"] if t["name"] == "two\nlines"][0]
assert ids["dtype"] == "i64" and ids["min"] == -2**63 and ids["max"] == 2**53 + 1, ids
PY

expect_exit 0 "roundtrip name_long.safetensors" -- "$TQLAB" roundtrip name_long.safetensors --k tq:b=4 --v tq:b=4 \
  -o copy.safetensors
clean_stream out.txt 400
clean_stream err.txt 600
"$python" - name_long.safetensors copy.safetensors <<'PY' || fail "roundtrip did not copy names and bytes"
import json, struct, sys
def tensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    return {k: data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in header.items()}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
assert a.keys() == b.keys()
for name in a:
    if name not in ("layers.0.k", "layers.0.v"):
        assert a[name] == b[name], name[:40]
PY

# A template that matches nothing: the message lists what the file has, escaped and short.
expect_exit 2 "missing template" -- "$TQLAB" roundtrip name_long.safetensors --keys 'nope.{layer}.k' --k tq:b=4 \
  --v tq:b=4 -o never.safetensors
one_clean_line "no tensor matches the keys template 'nope.{layer}.k'" "(it has: " 'two\nlines' "bytes cut]"
expect_exit 2 "missing values template" -- "$TQLAB" roundtrip name_long.safetensors --values 'two
lines' --k tq:b=4 --v tq:b=4 -o never.safetensors
one_clean_line "no {layer} placeholder" 'two\nlines'
[ -e never.safetensors ] && fail "a failed roundtrip wrote its output"

# ------------------------------------------------- an .npz member whose name is not UTF-8
expect_exit 0 "inspect name_not_utf8.npz" -- "$TQLAB" inspect name_not_utf8.npz
clean_stream out.txt 400
expect_contains out.txt 'ids\xFF' "i64"
expect_exit 0 "inspect --json name_not_utf8.npz" -- "$TQLAB" inspect --json name_not_utf8.npz
"$python" - out.txt <<'PY' || fail "inspect --json of a non-UTF-8 member name"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
assert sorted(t["name"] for t in d["tensors"]) == ["ids\\xFF", "layers.0.k", "layers.0.v"], d["tensors"]
PY
expect_exit 0 "roundtrip npz to npz" -- "$TQLAB" roundtrip name_not_utf8.npz --k tq:b=4 --v tq:b=4 -o copy.npz
"$python" -c 'import sys; sys.exit(b"ids\xff.npy" not in open("copy.npz", "rb").read())' ||
  fail "the member name's bytes were not kept"
expect_exit 2 "roundtrip npz to safetensors" -- "$TQLAB" roundtrip name_not_utf8.npz --k tq:b=4 --v tq:b=4 \
  -o from_npz.safetensors
one_clean_line "tensor name 'ids\\xFF' is not valid UTF-8" "safetensors"
[ -e from_npz.safetensors ] && fail "a refused safetensors output was written"

# ------------------------------------------------- file names are bytes too
npy=$'stem\xff.npy'
expect_exit 0 "inspect a non-UTF-8 file name" -- "$TQLAB" inspect "$npy"
clean_stream out.txt 400
expect_contains out.txt 'stem\xFF.npy (npy, 1 tensors)' 'stem\xFF '
expect_exit 0 "inspect --json a non-UTF-8 file name" -- "$TQLAB" inspect --json "$npy"
"$python" -c 'import json; d = json.load(open("out.txt")); assert d["path"] == "stem\\xFF.npy" and d["tensors"][0]["max"] == 4, d' ||
  fail "inspect --json of a non-UTF-8 path"
expect_exit 2 "missing file with a non-UTF-8 name" -- "$TQLAB" inspect $'gone\xfe\n.npy'
one_clean_line 'gone\xFE\n.npy'

# sweep --data with such a path: the results document stays valid JSON.
expect_exit 0 "synth" -- "$TQLAB" synth -o small.safetensors --layers 1 --kv-heads 1 --q-heads 2 --tokens 32 --dim 32
cp small.safetensors $'dump\xff.safetensors'
cat > config.json <<'JSON'
{"name": "hostile", "data": {"path": "small.safetensors"}, "runs": [{"k": "tq:b=4", "v": "tq:b=4"}],
 "metrics": {"attention": {"chunk": 32}, "needle": {"trials": 4, "synth_trials": 1}}, "out": "result.json"}
JSON
expect_exit 0 "sweep --data with a non-UTF-8 path" -- "$TQLAB" sweep --config config.json --quiet --data $'dump\xff.safetensors'
"$python" -c 'import json; d = json.load(open("result.json")); assert d["data"]["path"] == "dump\\xFF.safetensors", d["data"]' ||
  fail "sweep results with a non-UTF-8 data path"
finish
