#!/usr/bin/env bash
# Tokenizing speed, side by side in one run: tqlab tokenize (one thread) against Hugging Face's
# Rust tokenizers (npm `tokenizers`, its native binding) and its JavaScript port (transformers.js,
# npm `@lenml/tokenizers`), with the Llama 3, Qwen3 and Llama 2 tokenizer.json files, on a ~10 MB
# mixed text built from files every Debian has (tools/make_tokenize_bench_text.py). Also checks
# that tqlab's ids equal the Rust library's on the whole text. Needs the build (tools/build.sh)
# and the npm packages (tools/install_deps.sh). Figures: docs/PERFORMANCE.md.
#
#   tools/bench_tokenize.sh [MEGABYTES]     (default 10)
#
# The JavaScript port merges a whole Llama 2 text as one word in quadratic time (minutes for
# 10 MB): it gets the first MiB of the text for Llama 2 (LLAMA2_JS_BYTES to change).
set -euo pipefail
cd "$(dirname "$0")/.."
megabytes=${1:-10}
build_dir=${BUILD_DIR:-build}
tqlab=$build_dir/tqlab
reference=tools/tokenizer_reference/reference.mjs
work=$build_dir/bench_tokenize
mkdir -p "$work"
[ -x "$tqlab" ] || { echo "no $tqlab: build first (tools/build.sh)" >&2; exit 2; }
[ -d tools/tokenizer_reference/node_modules/tokenizers ] ||
  { echo "the npm reference packages are missing: run tools/install_deps.sh" >&2; exit 2; }

text=$work/text.txt
bytes=$(/usr/bin/python3 tools/make_tokenize_bench_text.py "$text" "$megabytes")
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; node $(node --version)"
echo "text: $text, $bytes bytes, sha256 $(sha256sum "$text" | cut -c1-16)..."
echo
printf '%-8s %10s %14s %14s %14s  %s\n' family tokens "tqlab MB/s" "Rust MB/s" "JS MB/s" "ids = Rust's"
for family in llama3 qwen3 llama2; do
  tokenizer=$(node "$reference" path "$family")
  js_bytes=$bytes
  [ "$family" = llama2 ] && js_bytes=${LLAMA2_JS_BYTES:-1048576}
  ours=$("$tqlab" tokenize --tokenizer "$tokenizer" --text "$text" --no-add-special -o "$work/$family.npy" --json --quiet)
  theirs=$(node "$reference" bench "$family" "$text" "$js_bytes" "$work/$family.npy")
  node -e '
    const [ours, theirs, family] = [JSON.parse(process.argv[1]), JSON.parse(process.argv[2]), process.argv[3]];
    // MB per CPU second (MB per wall second in parentheses).
    const rate = (bytes, cpu, wall) => `${(bytes / 1e6 / cpu).toFixed(2)} (${(bytes / 1e6 / wall).toFixed(2)})`;
    const js = rate(theirs.js_bytes, theirs.js_cpu_seconds, theirs.js_seconds) + (theirs.js_bytes < theirs.bytes ? "*" : "");
    console.log(`${family.padEnd(8)} ${String(ours.token_count).padStart(10)} ` +
      `${rate(ours.text.bytes, ours.cpu_seconds.encode, ours.seconds.encode).padStart(14)} ` +
      `${rate(theirs.bytes, theirs.rust_cpu_seconds, theirs.rust_seconds).padStart(14)} ` +
      `${js.padStart(14)}  ${theirs.same_ids_as_npy ? "yes" : "NO"}`);
  ' "$ours" "$theirs" "$family"
done
echo
echo "MB/s: megabytes (10^6 bytes) of text per second of CPU time, encoding only (per second of wall time in"
echo "parentheses); the tokenizer.json load (0.1-1 s) is not counted, for tqlab nor for the references."
echo "* the JavaScript port on the first $((${LLAMA2_JS_BYTES:-1048576} / 1024)) KiB only (quadratic on one long word)."
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
