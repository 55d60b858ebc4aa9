# What a hostile user does to a model folder and a text (issue "What a hostile user still breaks"),
# through the real binary: every config.json integer out of range is exit 2 naming the key, never a
# SIGFPE, in ppl, dump, a sweep's model block and allocate; what runs but deserves a word warns
# (a context past max_position_embeddings, once; an lm_head.weight that tied embeddings leave
# unused); an unreadable config, a directory given as text and an empty vocabulary say so.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- bad *.json *.txt *.npy
repo="$(cd "$(dirname "$0")/../.." && pwd)"
tiny="$repo/data/tinyllama_hf"
windows="$tiny/windows.npy"
[ -x "$python" ] || { echo "SKIP: $python is absent (the configs are edited with it)"; exit 77; }
mkdir -p bad

# variant NAME PYTHON: bad/NAME, the bundled model with its config.json edited by PYTHON (`c`, a dict).
variant() {
  rm -rf "bad/$1" && mkdir -p "bad/$1"
  ln -s "$tiny/model.safetensors" "bad/$1/model.safetensors"
  ln -s "$tiny/tokenizer.json" "bad/$1/tokenizer.json"
  "$python" - "$tiny/config.json" "bad/$1/config.json" <<PY || { echo "FAIL: could not make bad/$1"; exit 1; }
import json, sys
c = json.load(open(sys.argv[1]))
$2
json.dump(c, open(sys.argv[2], "w"))
PY
}
cat > sweep_tail.json <<'JSON'
, "ctx": 64, "chunks": 1}, "metrics": {"reconstruction": false, "attention": false, "needle": false},
 "grid": {"k": ["tq:b=4,nc"], "v": ["tq:b=4,nc"]}, "seeds": [0]}
JSON
# every_command NAME NEEDLE...: ppl, dump, a sweep's model block and allocate on bad/NAME, each refused.
every_command() {
  local name=$1
  shift
  expect_refused "ppl, $name" "bad/$name/config.json" "$@" -- "$TQLAB" ppl --model "bad/$name" --tokens "$windows" \
    --ctx 64 --chunks 1 -o bad.json
  expect_refused "dump, $name" "bad/$name/config.json" "$@" -- "$TQLAB" dump --model "bad/$name" --tokens "$windows" \
    --ctx 64 --chunks 1 -o bad.safetensors
  [ -e bad.safetensors ] && fail "dump, $name: left bad.safetensors"
  { printf '{"model": {"path": "bad/%s", "tokens": "%s"' "$name" "$windows"; cat sweep_tail.json; } > "sweep_$name.json"
  expect_refused "sweep, $name" "bad/$name/config.json" "$@" -- "$TQLAB" sweep --config "sweep_$name.json" \
    --out bad.json --quiet
  expect_refused "allocate, $name" "bad/$name/config.json" "$@" -- "$TQLAB" allocate --config "sweep_$name.json" \
    --budget 4 -o bad.json --quiet
  ls -a | grep -q "tmp-" && fail "$name: a temporary file was left: $(ls -a)"
}

variant kv_heads0 'c["num_key_value_heads"] = 0'
every_command kv_heads0 "num_key_value_heads" "0 is out of range"
variant heads0 'c["num_attention_heads"] = 0'
every_command heads0 "num_attention_heads" "0 is out of range"
variant layers0 'c["num_hidden_layers"] = 0'
every_command layers0 "num_hidden_layers" "0 is out of range"
variant vocab0 'c["vocab_size"] = 0'
every_command vocab0 "vocab_size" "0 is out of range"
variant intermediate0 'c["intermediate_size"] = 0'
every_command intermediate0 "intermediate_size" "0 is out of range"
variant positions0 'c["max_position_embeddings"] = 0'
every_command positions0 "max_position_embeddings" "0 is out of range"
variant heads3 'c["num_attention_heads"] = 3; c["num_key_value_heads"] = 3; del c["head_dim"]'
every_command heads3 "num_attention_heads" "3 does not divide hidden_size 256" "no head_dim"
variant window0 'c["architectures"] = ["MistralForCausalLM"]; c["model_type"] = "mistral"; c["sliding_window"] = 0'
every_command window0 "sliding_window" "0 is out of range: expected at least 1"

# ---------------------------------------------------------------- warnings
expect_exit 0 "ppl --ctx past max_position_embeddings" -- "$TQLAB" ppl --model "$tiny" --tokens "$windows" \
  --ctx 300 --chunks 2 --quiet
[ "$(grep -c "exceeds max_position_embeddings 256" err.txt)" = 1 ] ||
  fail "--ctx 300 past max_position_embeddings 256: expected one warning, got: $(cat err.txt)"
variant tied 'c["tie_word_embeddings"] = True'
expect_exit 0 "tied embeddings with lm_head.weight present" -- "$TQLAB" ppl --model bad/tied --tokens "$windows" \
  --ctx 64 --chunks 1 --quiet
expect_contains err.txt "tie_word_embeddings is true" "'lm_head.weight'" "not used"

# A model so sure and so wrong that exp(NLL) overflows: lm_head.weight x 1e4 (finite logits, NLL in the
# thousands of nats). The perplexity cannot be a double: a warning, and the NLL still written.
if "$python" -c 'import numpy' 2>/dev/null; then
mkdir -p bad/overconfident && cp "$tiny/config.json" "$tiny/tokenizer.json" bad/overconfident/
"$python" - "$tiny/model.safetensors" bad/overconfident/model.safetensors <<'PY' || fail "could not scale lm_head"
import json, struct, sys
import numpy as np
data = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", data[:8])[0]
entry = json.loads(data[8:8 + n])["lm_head.weight"]
assert entry["dtype"] == "F32"
begin, end = (8 + n + offset for offset in entry["data_offsets"])
data[begin:end] = (np.frombuffer(bytes(data[begin:end]), dtype="<f4") * 1e4).astype("<f4").tobytes()
open(sys.argv[2], "wb").write(data)
PY
  expect_exit 0 "ppl past double range" -- "$TQLAB" ppl --model bad/overconfident --tokens "$windows" --ctx 64 \
    --chunks 2 -o huge.json --quiet
  expect_contains err.txt "beyond double range" "mean NLL"
  "$python" - huge.json <<'PY' || fail "ppl past double range: the NLL is not written"
import json, sys
base = json.load(open(sys.argv[1]))["e2e"]["base"]
assert base["ppl"] is None and base["nll"] is not None and base["nll"] > 709.78, base
PY
fi

# ---------------------------------------------------------------- messages
mkdir -p bad/loop && ln -s ../tokenizer.json bad/loop/tokenizer.json
ln -s config.json bad/loop/config.json
expect_refused "a config.json that links to itself" "model 'bad/loop'" "config.json" "Too many levels of symbolic links" \
  -- "$TQLAB" ppl --model bad/loop --tokens "$windows"
if [ "$(id -u)" != 0 ]; then  # root reads any folder
  variant locked 'pass'
  chmod 000 bad/locked
  expect_refused "an unreadable model folder" "model 'bad/locked'" "Permission denied" -- \
    "$TQLAB" ppl --model bad/locked --tokens "$windows"
  chmod 755 bad/locked
fi
mkdir -p folder
expect_refused "tokenize --text FOLDER" "'folder' is a directory, not a file" -- \
  "$TQLAB" tokenize --tokenizer "$tiny" --text folder
"$python" - "$tiny/tokenizer.json" empty_vocab.json <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); t["model"]["vocab"] = {}; t["model"]["merges"] = []; t["added_tokens"] = []
t["post_processor"] = None
json.dump(t, open(sys.argv[2], "w"))
PY
printf 'hello' > hello.txt
expect_refused "a tokenizer with an empty vocabulary" "empty_vocab.json" "model.vocab" "is empty" -- \
  "$TQLAB" tokenize --tokenizer empty_vocab.json --text hello.txt

# A model-only sweep names its text, not '', when a journal or a re-run finds other inputs.
printf 'The quick brown fox jumps over the lazy dog. %.0s' $(seq 40) > text.txt
cat > text_sweep.json <<JSON
{"model": {"path": "$tiny", "text": "text.txt", "ctx": 64, "chunks": 1},
 "metrics": {"reconstruction": false, "attention": false, "needle": false},
 "grid": {"k": ["tq:b=4,nc"], "v": ["tq:b=4,nc"]}, "seeds": [0]}
JSON
expect_exit 0 "a model-only sweep" -- "$TQLAB" sweep --config text_sweep.json --out text_results.json --quiet
printf 'Another text entirely, so another identity. %.0s' $(seq 40) > text.txt
expect_exit 0 "re-run of a model-only sweep on another text" -- "$TQLAB" sweep --config text_results.json \
  --out rerun.json --quiet
expect_contains err.txt "text 'text.txt'"
grep -q "''" err.txt && fail "a re-run message names the data ''"

finish
