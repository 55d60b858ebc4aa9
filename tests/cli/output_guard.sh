# The one output guard (cli/output_guard.cpp, docs/RELIABILITY.md#the-output-guard) through the real
# binary: every writing command refuses, before any work (nothing on stdout, exit 2, one line naming
# the option), an output that is an existing folder, whose folder does not exist, or that is one of
# the files the command reads (model weights, config.json, tokenizer.json, text, tokens, data, config,
# profile, shards, results), named directly, through a symlink or through a hard link; and the
# inputs stay as they were.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
rm -rf -- m tok folder dir.safetensors locked *.cfg *.sums *.json *.txt *.safetensors *.npy link* hard*
# A copy of the bundled model: a command that wrote over its input would not damage the repository.
cp -r "$repo/data/tinyllama_hf" m
head -c 4096 /usr/share/common-licenses/GPL-3 >text.txt
mkdir folder
sums() { sha256sum m/* text.txt 2>/dev/null; }
sums >before.sums

# ---------------------------------------------------------------- ppl and dump: the model's files
for file in model.safetensors config.json tokenizer.json; do
  expect_refused "ppl -o the model's $file" "-o 'm/$file'" "a file of the model" -- \
    "$TQLAB" ppl --model m --text text.txt --ctx 64 -o "m/$file"
done
expect_refused "ppl -o the text" "-o 'text.txt'" "the text" -- "$TQLAB" ppl --model m --text text.txt --ctx 64 -o text.txt
cp m/windows.npy tokens.npy
expect_refused "ppl -o the token file" "-o 'tokens.npy'" "the token file" -- \
  "$TQLAB" ppl --model m --tokens tokens.npy --ctx 64 -o tokens.npy
ln -s m/config.json link.json
expect_refused "ppl -o a symlink to config.json" "-o 'link.json'" "a file of the model" -- \
  "$TQLAB" ppl --model m --text text.txt --ctx 64 -o link.json
ln m/tokenizer.json hard.json
expect_refused "ppl -o a hard link of tokenizer.json" "-o 'hard.json'" "a file of the model" -- \
  "$TQLAB" ppl --model m --text text.txt --ctx 64 -o hard.json
expect_refused "ppl -o a folder" "-o 'folder'" "is a folder" -- "$TQLAB" ppl --model m --text text.txt --ctx 64 -o folder
expect_refused "ppl -o ./" "-o './'" "is a folder" -- "$TQLAB" ppl --model m --text text.txt --ctx 64 -o ./
expect_refused "ppl -o in a missing folder" "-o 'nowhere/x.json'" "'nowhere' does not exist" -- \
  "$TQLAB" ppl --model m --text text.txt --ctx 64 -o nowhere/x.json
ln -s m/model.safetensors link.safetensors
expect_refused "dump -o a symlink to the weights" "-o 'link.safetensors'" "a file of the model" -- \
  "$TQLAB" dump --model m --text text.txt --ctx 64 -o link.safetensors
mkdir -p tok && cp m/tokenizer.json tok/ && ln -s tok/tokenizer.json tok.safetensors
expect_refused "dump -o the tokenizer given by --tokenizer" "-o 'tok.safetensors'" "a file of the tokenizer 'tok'" -- \
  "$TQLAB" dump --model m --text text.txt --tokenizer tok --ctx 64 -o tok.safetensors
mkdir -p dir.safetensors
expect_refused "dump -o a folder" "-o 'dir.safetensors'" "is a folder" -- \
  "$TQLAB" dump --model m --text text.txt --ctx 64 -o dir.safetensors
if [ "$(id -u)" != 0 ]; then  # root writes anywhere
  mkdir -p locked && chmod 555 locked
  expect_refused "ppl -o in a folder that cannot be written" "'locked' is not writable" -- \
    "$TQLAB" ppl --model m --text text.txt --ctx 64 -o locked/x.json
  chmod 755 locked
fi

# ---------------------------------------------------------------- sweep and allocate: what a config names
"$TQLAB" synth -o kv.safetensors --layers 2 --kv-heads 1 --q-heads 2 --tokens 64 --dim 64 >/dev/null 2>&1 ||
  fail "synth failed"
cat >data.json <<'JSON'
{"name": "guard", "data": {"path": "kv.safetensors"}, "grid": {"k": ["tq:b=3"], "v": ["tq:b=3"]},
 "metrics": {"attention": {"chunk": 64}, "needle": {"trials": 0}}}
JSON
cat >model.json <<'JSON'
{"name": "guard", "model": {"path": "m", "text": "text.txt", "ctx": 64, "chunks": 2},
 "grid": {"k": ["tq:b=3"], "v": ["tq:b=3"]}}
JSON
sha256sum kv.safetensors data.json model.json >>before.sums
expect_refused "sweep --out the data" "--out 'kv.safetensors'" "the data" -- \
  "$TQLAB" sweep --config data.json --out kv.safetensors
expect_refused "sweep --out the config" "the config" -- "$TQLAB" sweep --config data.json --out data.json
for file in model.safetensors config.json tokenizer.json; do
  expect_refused "sweep --out the model's $file" "--out 'm/$file'" "a file of the model" -- \
    "$TQLAB" sweep --config model.json --out "m/$file"
done
expect_refused "sweep --out the model block's text" "the text" -- "$TQLAB" sweep --config model.json --out text.txt
expect_refused "sweep --out a folder" "--out 'folder'" "is a folder" -- "$TQLAB" sweep --config data.json --out folder
expect_refused "sweep --out ./" "--out './'" "is a folder" -- "$TQLAB" sweep --config data.json --out ./
[ -e .journal ] && fail "sweep --out ./ left ./.journal"
[ -e folder.journal ] && fail "sweep --out folder left folder.journal"
"$python" -c 'import json; c = json.load(open("data.json")); c["out"] = "folder"; json.dump(c, open("out.json.cfg", "w"))'
expect_refused "sweep with \"out\" a folder" "\"out\" of 'out.json.cfg'" "is a folder" -- "$TQLAB" sweep --config out.json.cfg
expect_refused "allocate -o the weights" "-o 'm/model.safetensors'" "a file of the model" -- \
  "$TQLAB" allocate --config model.json --budget 4 -o m/model.safetensors
expect_refused "allocate -o the data" "the data" -- "$TQLAB" allocate --config data.json --budget 4 -o kv.safetensors
expect_refused "allocate -o the config" "the config" -- "$TQLAB" allocate --config data.json --budget 4 -o data.json
echo '{}' >profile.json
expect_refused "allocate -o the --profile-file" "--profile-file" -- \
  "$TQLAB" allocate --config data.json --budget 4 --profile-file profile.json -o profile.json
expect_refused "allocate -o a folder" "is a folder" -- "$TQLAB" allocate --config data.json --budget 4 -o folder

# ---------------------------------------------------------------- the other writers
expect_exit 0 "a results file" -- "$TQLAB" sweep --config data.json --out results.json --quiet
sha256sum results.json >>before.sums
expect_refused "report -o the results it reads" "-o 'results.json'" "the results file" -- \
  "$TQLAB" report results.json -o results.json
ln results.json hard_results.json
expect_refused "report -o a hard link of the results" "the results file" -- \
  "$TQLAB" report results.json -o hard_results.json
expect_refused "report -o a folder" "is a folder" -- "$TQLAB" report results.json -o folder
ln kv.safetensors hard_kv.safetensors
expect_refused "roundtrip -o a hard link of the input" "-o 'hard_kv.safetensors'" "the input" -- \
  "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 -o hard_kv.safetensors
expect_refused "roundtrip -o a folder" "is a folder" -- "$TQLAB" roundtrip kv.safetensors --k tq:b=3 --v tq:b=3 -o folder
expect_refused "merge -o a shard" "-o 'results.json'" "a shard" -- "$TQLAB" merge results.json -o results.json
expect_refused "tokenize --decode -o the tokenizer" "-o 'm/tokenizer.json'" "the tokenizer" -- \
  "$TQLAB" tokenize --tokenizer m --decode text.txt -o m/tokenizer.json
expect_refused "tokenize -o the text" "-o 'text.txt'" "the text" -- "$TQLAB" tokenize --tokenizer m --text text.txt -o text.txt
expect_refused "synth -o a folder" "-o 'folder'" "is a folder" -- "$TQLAB" synth -o folder
expect_refused "codebook export -o a folder" "is a folder" -- "$TQLAB" codebook export --dims 64 --bits 2 -o folder
expect_refused "verify-bounds --json a folder" "--json 'folder'" "is a folder" -- \
  "$TQLAB" verify-bounds --dims 64 --bits 2 --json folder

checks=$((checks + 1))
sums_now() { sha256sum m/* text.txt 2>/dev/null; sha256sum kv.safetensors data.json model.json results.json; }
sums_now | diff -q - before.sums >/dev/null || fail "an input changed: $(sums_now | diff - before.sums)"
finish
