# tqlab tokenize against Hugging Face's own tokenizers: every text of tests/data/tokenizer_corpus
# with the Llama 3, Qwen3 and Llama 2 (Mistral) tokenizer.json files and two variants in the forms
# other releases use (Llama 3 with its BOS template, Mistral's Metaspace), with and without special
# tokens, must give the ids of the Rust library (npm `tokenizers`), and those of the JavaScript
# port (npm `@lenml/tokenizers`) wherever it agrees with the Rust library, and --decode the Rust
# library's text; texts that are not UTF-8 are
# checked by properties (tests/cli/tokenizer_reference.mjs says which).
#
# The npm packages are test dependencies that tools/install_deps.sh installs: when they or Debian's
# nodejs are missing this test FAILS (it does not skip), so that CI cannot pass without the reference.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
require_references tokenizer_reference/node_modules/tokenizers tokenizer_reference/node_modules/@lenml/tokenizers
"$node" "$repo/tests/cli/tokenizer_reference.mjs" "$TQLAB" "$repo/tests/data/tokenizer_corpus"
