# A GGUF model is the model its weights decode to. tools/hf_to_gguf.py writes the bundled model as
# F32, F16, BF16, Q8_0 and Q4_0 GGUF files (the quantized ones by ggml's reference quantizers, the 688-wide
# down projection falling back to F16 as llama-quantize does) and beside each the Hugging Face folder
# of its decoded weights. Required:
# - `ppl` on the GGUF equals `ppl` on that folder to 1e-6 relative (measured: 4e-9 .. 2e-8), with
#   the float cache and with a quantized one (K and V in Hugging Face channel order on both sides);
# - on the Q4_0 file, the float64 numpy forward (tools/reference_forward.py) on the decoded weights
#   gives the same perplexity to 1e-5 (measured 4e-8);
# - the GGUF's embedded tokenizer gives the ids of the folder's tokenizer.json on a text.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
require_numpy "tools/hf_to_gguf.py and tools/reference_forward.py are numpy programs"
model="$repo/data/tinyllama_hf"
tokens="$model/windows.npy"

# ppl_of JSON: the base perplexity, or with a second argument the first run's.
ppl_of() {
  "$python" -c 'import json, sys
doc = json.load(open(sys.argv[1]))
print(repr(doc["e2e"]["base"]["ppl"] if len(sys.argv) < 3 else doc["runs"][0]["metrics"]["e2e_ppl"]["mean"]))' "$@"
}
# within A B TOLERANCE WHAT: |A - B| <= TOLERANCE |B|, reported either way.
within() {
  checks=$((checks + 1))
  if "$python" -c 'import sys; a, b, t = map(float, sys.argv[1:4]); sys.exit(abs(a - b) > t * abs(b))' "$1" "$2" "$3"; then
    echo "$4: $1 vs $2"
  else
    fail "$4: $1 vs $2 differ by more than $3 relative"
  fi
}

for dtype in f32 f16 bf16 q8_0 q4_0; do
  "$python" "$repo/tools/hf_to_gguf.py" "$model" "$dtype.gguf" --dtype "$dtype" --dequantized "decoded_$dtype" ||
    { fail "hf_to_gguf.py --dtype $dtype failed"; continue; }
  for source in "$dtype.gguf" "decoded_$dtype"; do
    expect_exit 0 "ppl on $source" -- "$TQLAB" ppl --model "$source" --tokens "$tokens" --ctx 128 --chunks 2 \
      --k q4_0 --v q8_0 -o "$source.json" --quiet
  done
  within "$(ppl_of "$dtype.gguf.json")" "$(ppl_of "decoded_$dtype.json")" 1e-6 "$dtype: base PPL, GGUF vs decoded folder"
  within "$(ppl_of "$dtype.gguf.json" run)" "$(ppl_of "decoded_$dtype.json" run)" 1e-6 \
    "$dtype: PPL with a q4_0/q8_0 cache, GGUF vs decoded folder"
done

# The quantized file against the float64 forward on its decoded weights.
checks=$((checks + 1))
if "$python" "$repo/tools/reference_forward.py" decoded_q4_0 "$tokens" --ctx 128 --chunks 2 -o q4_0.npz; then
  reference=$("$python" - q4_0.npz "$tokens" <<'PY'
import sys
import numpy as np
logits = np.load(sys.argv[1])["logits"].astype(np.float64)
tokens = np.load(sys.argv[2]).reshape(-1)
chunks, ctx, _ = logits.shape
nll = []
for c in range(chunks):
    for p in range(ctx // 2, ctx - 1):  # second-half scoring: positions ctx/2 .. ctx-2
        row = logits[c, p]
        top = row.max()
        nll.append(top + np.log(np.exp(row - top).sum()) - row[tokens[c * ctx + p + 1]])
print(repr(float(np.exp(np.mean(nll)))))
PY
  )
  within "$(ppl_of q4_0.gguf.json)" "$reference" 1e-5 "q4_0: tqlab on the GGUF vs the float64 forward"
else
  fail "reference_forward.py failed on decoded_q4_0"
fi

# The embedded tokenizer: the same ids as the folder's tokenizer.json.
printf 'Once upon a time, the GGUF file said: "hello" 123\n' >text.txt
expect_exit 0 "tokenize with the GGUF" -- "$TQLAB" tokenize --tokenizer f32.gguf --text text.txt --json
mv out.txt gguf_ids.json
expect_exit 0 "tokenize with the folder" -- "$TQLAB" tokenize --tokenizer "$model" --text text.txt --json
checks=$((checks + 1))
"$python" -c 'import json, sys; a, b = (json.load(open(p))["ids"] for p in sys.argv[1:]); sys.exit(a != b or not a)' \
  out.txt gguf_ids.json || fail "the GGUF's tokenizer and tokenizer.json give other ids"
finish
