// tqlab tokenize --tokenizer FILE.gguf against llama.cpp's own tokenizer (node-llama-cpp, the
// pinned package in tools/llamacpp_reference) on the same GGUF files:
//
//   node gguf_tokenizer_reference.mjs TQLAB CORPUS_DIR GGUF...
//
// For every UTF-8 text of the corpus: tqlab's ids without special tokens (--no-add-special) must
// equal llama.cpp's tokenize(text, specialTokens = true) (common_tokenize with add_special false and
// parse_special true: control tokens written in the text are matched, as llama-tokenize does by
// default). With special tokens (tqlab's default) the ids must be llama.cpp's with BOS first exactly
// when llama.cpp would add it (model.tokens.shouldPrependBosToken). Prints one line per failure;
// exits 1 when there is any.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(fileURLToPath(import.meta.url), '..', '..', '..');
const { getLlama } = await import(join(repo, 'tools', 'llamacpp_reference', 'node_modules', 'node-llama-cpp',
  'dist', 'index.js'));

const [tqlab, corpus, ...ggufs] = process.argv.slice(2);
let failures = 0;
let checks = 0;
const fail = (message) => {
  failures += 1;
  console.log(`FAIL: ${message}`);
};
const utf8 = (bytes) => {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
};
const tqlabIds = (gguf, file, addSpecial) => {
  const out = execFileSync(tqlab, ['tokenize', '-q', '--tokenizer', gguf, '--text', file,
    addSpecial ? '--add-special' : '--no-add-special'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  return out.split(/\s+/).filter((s) => s !== '').map(Number);
};
const firstDifference = (a, b) => {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i += 1;
  return `at ${i}: tqlab [${a.slice(i, i + 6)}] llama.cpp [${b.slice(i, i + 6)}] (lengths ${a.length}, ${b.length})`;
};

const llama = await getLlama({ gpu: false, build: 'never', progressLogs: false });
const files = readdirSync(corpus).sort().map((name) => join(corpus, name));
for (const gguf of ggufs) {
  const model = await llama.loadModel({ modelPath: gguf, vocabOnly: true });
  const bos = model.tokens.bos;
  const prependsBos = model.tokens.shouldPrependBosToken;
  for (const file of files) {
    const text = utf8(readFileSync(file));
    if (text === null) continue;
    const reference = Array.from(model.tokenize(text, true));
    const ours = tqlabIds(gguf, file, false);
    checks += 1;
    if (ours.join(' ') !== reference.join(' ')) fail(`${gguf} ${file}: ${firstDifference(ours, reference)}`);
    const withSpecial = tqlabIds(gguf, file, true);
    const expected = prependsBos ? [bos, ...reference] : reference;
    checks += 1;
    if (withSpecial.join(' ') !== expected.join(' ')) {
      fail(`${gguf} ${file} with special tokens (llama.cpp adds BOS: ${prependsBos}): `
        + firstDifference(withSpecial, expected));
    }
  }
  await model.dispose();
}
console.log(`${checks} checks, ${failures} failures`);
process.exit(failures === 0 ? 0 : 1);
