// tqlab tokenize against Hugging Face's own tokenizers (tools/tokenizer_reference/reference.mjs):
// every text of the corpus with every family, with and without special tokens, and with two
// variants of the files in the forms other releases use (Llama 3 with its BOS template, Mistral's
// Metaspace pre-tokenizer: reference.mjs VARIANTS).
//
//   node tokenizer_reference.mjs TQLAB CORPUS_DIR
//
// UTF-8 texts: tqlab's ids must equal the Rust library's (Hugging Face tokenizers itself) and the
// JavaScript port's, and tqlab's --decode of them must equal the Rust decode. Where the two
// references disagree with each other, the Rust library is the one tqlab must equal, and the
// disagreement is printed.
//
// Texts that are not UTF-8 (a JavaScript string cannot hold them) are checked by properties:
//  - every family takes them (byte-level: bytes are bytes; Llama 2: byte fallback);
//  - byte-level families: the ids are the reference's ids of the valid stretches between the stray
//    bytes, with each stray byte's own token between them (a stray byte is never part of a
//    pre-tokenizer match, so no piece crosses it);
//  - every stray byte becomes its own byte token, and --decode gives the bytes back exactly
//    (Llama 2: for a text without special tokens, whose "<s>" pieces would each get a "▁").
// Prints one line per failure; exits 1 when there is any.
import { execFile } from 'node:child_process';
import { cpus } from 'node:os';
import { promisify } from 'node:util';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(fileURLToPath(import.meta.url), '..', '..', '..');
const { FAMILIES, VARIANTS, loadReferences, writeVariant } = await import(join(repo, 'tools', 'tokenizer_reference', 'reference.mjs'));

const [tqlab, corpus] = process.argv.slice(2);
let failures = 0;
let checks = 0;
const fail = (message) => {
  failures += 1;
  console.log(`FAIL: ${message}`);
};

// tqlab runs once per (tokenizer, text, special tokens) and once per decode: about 300 processes,
// most of their time spent loading tokenizer.json. They run ahead of the comparisons, as many at
// once as there are cores; the comparisons then read their results in order.
const run = promisify(execFile);
const width = Math.max(1, cpus().length);

async function inParallel(jobs) {
  const results = new Array(jobs.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(width, jobs.length) }, async () => {
    while (next < jobs.length) {
      const i = next++;
      try {
        results[i] = { value: await jobs[i]() };
      } catch (error) {
        results[i] = { error };
      }
    }
  }));
  return results;
}

const encodeKey = (tokenizer, file, addSpecial) => `${tokenizer}\0${file}\0${addSpecial}`;
const encoded = new Map();
const decoded = new Map();
let decodeFiles = 0;

async function encodeAll(requests) {
  const results = await inParallel(requests.map(([tokenizer, file, addSpecial]) => async () => {
    const { stdout } = await run(tqlab, ['tokenize', '--tokenizer', tokenizer, '--text', file,
      addSpecial ? '--add-special' : '--no-add-special', '--quiet'], { encoding: 'utf8', maxBuffer: 1 << 28 });
    return stdout.trim() === '' ? [] : stdout.trim().split(' ').map(Number);
  }));
  requests.forEach((request, i) => encoded.set(encodeKey(...request), results[i]));
}

async function decodeAll(requests) {
  const results = await inParallel(requests.map(([tokenizer, ids]) => async () => {
    const idsFile = `ids-${decodeFiles++}.txt`;
    writeFileSync(idsFile, ids.join(' '));
    const { stdout } = await run(tqlab, ['tokenize', '--tokenizer', tokenizer, '--decode', idsFile],
      { encoding: 'buffer', maxBuffer: 1 << 28 });
    return stdout;
  }));
  requests.forEach(([tokenizer, ids], i) => decoded.set(`${tokenizer}\0${ids.join(' ')}`, results[i]));
}

function tqlabEncode(tokenizer, file, addSpecial) {
  const result = encoded.get(encodeKey(tokenizer, file, addSpecial));
  if (result.error) throw result.error;
  return result.value;
}

function tqlabDecode(tokenizer, ids) {
  const result = decoded.get(`${tokenizer}\0${ids.join(' ')}`);
  if (result.error) throw result.error;
  return result.value;
}

function firstDifference(a, b, labels = ['tqlab', 'reference']) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i += 1;
  const around = (ids) => `[${ids.slice(Math.max(0, i - 3), i + 5)}]`;
  return `first difference at ${i}: ${labels[0]} ${around(a)} vs ${labels[1]} ${around(b)} ` +
    `(lengths ${a.length}, ${b.length})`;
}

const same = (a, b) => a.length === b.length && a.every((value, i) => value === b[i]);

// The stretches of `bytes` between its stray bytes (those in no well-formed UTF-8 character).
function splitAtStrayBytes(bytes) {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const parts = [];  // {text} or {stray: byte}
  let start = 0;
  let at = 0;
  const validLength = (i) => {
    for (const length of [1, 2, 3, 4]) {
      if (i + length > bytes.length) break;
      try {
        decoder.decode(bytes.subarray(i, i + length));
        return length;
      } catch { /* not this length */ }
    }
    return 0;
  };
  while (at < bytes.length) {
    const length = validLength(at);
    if (length > 0) {
      at += length;
      continue;
    }
    if (at > start) parts.push({ text: decoder.decode(bytes.subarray(start, at)) });
    parts.push({ stray: bytes[at] });
    at += 1;
    start = at;
  }
  if (at > start) parts.push({ text: decoder.decode(bytes.subarray(start, at)) });
  return parts;
}

// GPT-2's byte-to-character table (the byte-level vocabularies' alphabet).
function byteLevelChar(byte) {
  const own = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  if (own(byte)) return String.fromCodePoint(byte);
  let shifted = 0;
  for (let b = 0; b < byte; b += 1) if (!own(b)) shifted += 1;
  return String.fromCodePoint(0x100 + shifted);
}

const files = readdirSync(corpus).filter((name) => name.endsWith('.txt')).sort().map((name) => join(corpus, name));
const tokenizers = [
  ...FAMILIES.map((family) => ({ name: family, family, references: loadReferences(family) })),
  ...Object.entries(VARIANTS).map(([name, variant]) => (
    { name, family: variant.family, references: loadReferences(variant.family, writeVariant(name, '.')) })),
];
// Every tqlab run the comparisons below read, first the encodes, then the decodes of their ids.
const isUtf8 = (bytes) => {
  try {
    new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
};
const encodes = [];
for (const { references } of tokenizers) {
  for (const file of files) {
    const utf8 = isUtf8(readFileSync(file));
    for (const addSpecial of utf8 ? [true, false] : [false]) encodes.push([references.path, file, addSpecial]);
  }
}
await encodeAll(encodes);
const decodes = [];
for (const { family, references } of tokenizers) {
  for (const file of files) {
    const bytes = readFileSync(file);
    const result = encoded.get(encodeKey(references.path, file, false));
    const hasSpecial = /<s>|<\/s>|<unk>/.test(bytes.toString('latin1'));
    if (!result.error && (isUtf8(bytes) || family !== 'llama2' || !hasSpecial)) decodes.push([references.path, result.value]);
  }
}
await decodeAll(decodes);

for (const { name: tokenizerName, family, references } of tokenizers) {
  const vocabulary = JSON.parse(readFileSync(references.path, 'utf8')).model.vocab;
  const byteLevel = family !== 'llama2';
  const strayToken = (byte) => vocabulary[byteLevel ? byteLevelChar(byte)
    : `<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`];
  for (const file of files) {
    const bytes = readFileSync(file);
    const name = `${tokenizerName} ${file.split('/').pop()}`;
    let text = null;
    try {
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
    } catch { /* checked by properties below */ }
    if (text !== null) {
      for (const addSpecial of [true, false]) {
        checks += 1;
        const label = `${name} ${addSpecial ? 'with' : 'without'} special tokens`;
        const ours = tqlabEncode(references.path, file, addSpecial);
        const rust = await references.rust.encode(text, addSpecial);
        const js = references.js.encode(text, addSpecial);
        if (!same(ours, rust)) fail(`${label}: tqlab differs from Hugging Face tokenizers (Rust): ${firstDifference(ours, rust)}`);
        if (!same(rust, js)) {
          // Seen with the Metaspace variant: the JavaScript port puts no "▁" before the text where
          // prepend_scheme is "first"; the Rust library (and tqlab) do.
          console.log(`note: ${label}: the JavaScript port differs from the Rust library: ` +
            firstDifference(js, rust, ['JavaScript', 'Rust']));
        } else if (!same(ours, js)) {
          fail(`${label}: tqlab differs from the JavaScript reference: ${firstDifference(ours, js)}`);
        }
        if (!addSpecial) {
          checks += 1;
          const decoded = tqlabDecode(references.path, ours);
          const expected = Buffer.from(await references.rust.decode(rust));
          if (!decoded.equals(expected)) {
            fail(`${label}: tqlab --decode gives ${JSON.stringify(decoded.toString().slice(0, 80))}, Hugging Face ` +
              `${JSON.stringify(expected.toString().slice(0, 80))}`);
          }
        }
      }
      continue;
    }
    // Not UTF-8: properties.
    checks += 1;
    const parts = splitAtStrayBytes(bytes);
    let ours;
    try {
      ours = tqlabEncode(references.path, file, false);
    } catch (error) {
      fail(`${name}: tqlab refused a text that is not UTF-8 (every family here takes any bytes): ${error.stderr}`);
      continue;
    }
    for (const part of parts.filter((p) => p.stray !== undefined)) {
      if (!ours.includes(strayToken(part.stray))) {
        fail(`${name}: stray byte 0x${part.stray.toString(16)} has no token ${strayToken(part.stray)} of its own in [${ours}]`);
      }
    }
    if (byteLevel) {
      const expected = [];
      for (const part of parts) {
        if (part.stray !== undefined) {
          expected.push(strayToken(part.stray));
        } else {
          expected.push(...(await references.rust.encode(part.text, false)));
        }
      }
      if (!same(ours, expected)) {
        fail(`${name}: ids are not the reference's ids of the stretches between stray bytes: ${firstDifference(ours, expected)}`);
      }
    }
    const hasSpecial = /<s>|<\/s>|<unk>/.test(bytes.toString('latin1'));
    if (byteLevel || !hasSpecial) {
      const decoded = tqlabDecode(references.path, ours);
      if (!decoded.equals(bytes)) {
        fail(`${name}: --decode does not give the bytes back: ${JSON.stringify([...decoded])} vs ${JSON.stringify([...bytes])}`);
      }
    }
  }
}
console.log(`${checks} comparisons, ${failures} failures`);
process.exit(failures === 0 ? 0 : 1);
