# tqlab tokenize --tokenizer FILE.gguf against llama.cpp's own tokenizer (node-llama-cpp, the pinned
# package in tools/llamacpp_reference): the Llama 3 (gpt2, pre llama-bpe), Qwen3 (gpt2, pre qwen2)
# and Llama 2 (llama, SentencePiece-style) vocabularies of the Hugging Face reference packages are
# written as vocabulary-only GGUFs by tools/tokenizer_to_gguf.py, and every UTF-8 text of
# tests/data/tokenizer_corpus must get llama.cpp's ids, with and without BOS
# (tests/cli/gguf_tokenizer_reference.mjs). Then the bundled model converted by tools/hf_to_gguf.py
# must give `ppl --text` without --tokenizer the perplexity of its safetensors folder.
#
# The npm packages are test dependencies that tools/install_deps.sh installs: when they or Debian's
# nodejs are missing this test FAILS (it does not skip), so that CI cannot pass without the reference.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
require_references llamacpp_reference/node_modules/node-llama-cpp tokenizer_reference/node_modules/tokenizers

reference_path() { (cd "$repo/tools/tokenizer_reference" && "$node" reference.mjs path "$1"); }
convert="$repo/tools/tokenizer_to_gguf.py"
checks=$((checks + 1))
"$python" "$convert" "$(reference_path llama3)" llama-bpe.gguf --model gpt2 --pre llama-bpe \
    --bos '<|begin_of_text|>' --eos '<|end_of_text|>' || fail "tokenizer_to_gguf llama3"
"$python" "$convert" "$(reference_path qwen3)" qwen2.gguf --model gpt2 --pre qwen2 \
    --bos '<|endoftext|>' --eos '<|endoftext|>' || fail "tokenizer_to_gguf qwen3"
"$python" "$convert" "$(reference_path llama2)" llama-spm.gguf --model llama \
    --bos '<s>' --eos '</s>' --unk '<unk>' || fail "tokenizer_to_gguf llama2"
checks=$((checks + 1))
"$node" "$repo/tests/cli/gguf_tokenizer_reference.mjs" "$TQLAB" "$repo/tests/data/tokenizer_corpus" \
    llama-bpe.gguf qwen2.gguf llama-spm.gguf 2>llama_log.txt || fail "tqlab's ids differ from llama.cpp's"

# The model's own tokenizer: ppl on the GGUF without --tokenizer equals the folder's.
"$python" "$repo/tools/hf_to_gguf.py" "$repo/data/tinyllama_hf" tiny.gguf || fail "hf_to_gguf"
head -c 2000 "$repo/tests/data/tokenizer_corpus/english_prose.txt" > text.txt
checks=$((checks + 1))
folder=$("$TQLAB" ppl -q --model "$repo/data/tinyllama_hf" --text text.txt --ctx 64 | grep 'PPL =')
file=$("$TQLAB" ppl -q --model tiny.gguf --text text.txt --ctx 64 | grep 'PPL =')
if [ -z "$folder" ] || [ "$folder" != "$file" ]; then fail "ppl: folder '$folder', GGUF '$file'"; fi
checks=$((checks + 1))
"$TQLAB" tokenize --tokenizer tiny.gguf --text text.txt --json -q > tokenize.json || fail "tokenize tiny.gguf"
grep -q '"tiny.gguf"' tokenize.json || fail "tokenize --json does not name tiny.gguf: $(head -c 300 tokenize.json)"
finish
