// llama.cpp's own perplexity and KL divergence for a KV cache type, through node-llama-cpp's
// prebuilt CPU libraries: the reference `tqlab ppl --engine llama.cpp` is held to
// (tests/cli/llamacpp_reference.sh).
//
//   node perplexity.mjs MODEL.gguf TOKENS.npy --ctx N [--chunks C] [--threads T] [--run K,V[,rot=off]]...
//
// TOKENS.npy: int32 or int64 token ids (one-dimensional). Chunking and scoring are `tqlab ppl`'s
// (src/model/end_to_end.h): chunk c is tokens [c N, (c + 1) N), a fresh sequence each (position 0
// at its first token, nothing added before it); positions N/2 .. N-2 of each chunk predict tokens
// N/2+1 .. N-1 ("second-half" scoring). --chunks 0 (the default): every whole chunk.
//
// llama.cpp runs as llama-perplexity runs it on a CPU: flash attention on, one thread (--threads T:
// T threads; default 1), the whole chunk in one batch. The base is an f16 cache (llama.cpp's
// default); each --run names the K and V cache types (f32, f16, bf16, q8_0, q4_0, q4_1, ...: ggml's
// type names) and, with rot=off, sets LLAMA_ATTN_ROT_DISABLE=1 for that context (llama.cpp reads it
// when the cache is made, src/llama-kv-cache.cpp, llama_kv_cache::llama_kv_cache).
//
// Prints one JSON object: {"scored": tokens scored, "base": {"ppl"}, "runs": [{"k", "v", "rot",
// "ppl", "kld"}]}; kld is the mean over scored tokens of KL(base || run) in nats, computed in double
// from llama.cpp's float logits, as perplexity is.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { getLlama, GgmlType } = await import(join(here, 'node_modules', 'node-llama-cpp', 'dist', 'index.js'));

function usage(message) {
  console.error(`perplexity.mjs: ${message}`);
  console.error('usage: node perplexity.mjs MODEL.gguf TOKENS.npy --ctx N [--chunks C] [--threads T] [--run K,V[,rot=off]]...');
  process.exit(2);
}

// The ids of a one-dimensional little-endian int32/int64 .npy file.
function readTokens(path) {
  const bytes = readFileSync(path);
  if (bytes.toString('latin1', 0, 6) !== '\x93NUMPY') usage(`${path}: not a .npy file`);
  const major = bytes[6];
  const headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLength;
  const header = bytes.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  if (/'fortran_order':\s*True/.test(header)) usage(`${path}: Fortran order`);
  const data = bytes.subarray(start);
  if (descr === '<i4') return Array.from(new Int32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)));
  if (descr === '<i8') {
    return Array.from(new BigInt64Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)), Number);
  }
  return usage(`${path}: dtype ${descr} (expected <i4 or <i8)`);
}

function parseArgs(argv) {
  const options = { ctx: 0, chunks: 0, threads: 1, runs: [] };
  const positional = [];
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    if (arg === '--ctx') options.ctx = Number(argv[++i]);
    else if (arg === '--chunks') options.chunks = Number(argv[++i]);
    else if (arg === '--threads') options.threads = Number(argv[++i]);
    else if (arg === '--run') {
      const [k, v, ...rest] = (argv[++i] ?? '').split(',');
      if (!k || !v || rest.some((r) => r !== 'rot=off' && r !== 'rot=on')) usage(`--run '${argv[i]}': expected K,V[,rot=off]`);
      options.runs.push({ k, v, rot: !rest.includes('rot=off') });
    } else if (arg.startsWith('--')) usage(`unknown option ${arg}`);
    else positional.push(arg);
  }
  if (positional.length !== 2) usage('expected MODEL.gguf and TOKENS.npy');
  if (!Number.isInteger(options.ctx) || options.ctx < 4) usage('--ctx must be an integer of at least 4');
  if (!Number.isInteger(options.threads) || options.threads < 1) usage('--threads must be an integer of at least 1');
  [options.model, options.tokens] = positional;
  return options;
}

function ggmlType(name) {
  const type = GgmlType[name.toUpperCase()];
  if (type === undefined) usage(`unknown ggml type '${name}'`);
  return name.toUpperCase();
}

// Natural-log softmax of a logits Map (token -> logit) over a vocabulary of `vocab`, in double.
function logSoftmax(logits, vocab) {
  const out = new Float64Array(vocab).fill(-Infinity);
  let max = -Infinity;
  for (const [token, logit] of logits) {
    out[token] = logit;
    if (logit > max) max = logit;
  }
  let sum = 0;
  for (let t = 0; t < vocab; ++t) sum += Math.exp(out[t] - max);
  const shift = max + Math.log(sum);
  for (let t = 0; t < vocab; ++t) out[t] -= shift;
  return out;
}

const options = parseArgs(process.argv.slice(2));
const tokens = readTokens(options.tokens);
const available = Math.floor(tokens.length / options.ctx);
const chunks = options.chunks === 0 ? available : options.chunks;
if (chunks < 1 || chunks > available) usage(`--chunks ${options.chunks}: the tokens hold ${available} chunks of ${options.ctx}`);

const llama = await getLlama({ gpu: false, build: 'never', progressLogs: false, logLevel: 'error' });
const model = await llama.loadModel({ modelPath: options.model });
const vocab = model.fileInfo.metadata.llama?.vocab_size;
if (!Number.isInteger(vocab) || vocab < 1) usage(`${options.model}: no vocabulary size`);

// Log-probabilities of every scored position of every chunk: [chunk * scored + i] -> Float64Array(vocab).
async function evaluate(k, v, rot) {
  if (rot) delete process.env.LLAMA_ATTN_ROT_DISABLE;
  else process.env.LLAMA_ATTN_ROT_DISABLE = '1';
  const context = await model.createContext({
    contextSize: options.ctx, batchSize: options.ctx, threads: options.threads, flashAttention: true,
    experimentalKvCacheKeyType: ggmlType(k), experimentalKvCacheValueType: ggmlType(v),
  });
  const first = options.ctx / 2 | 0;
  const rows = [];
  const sequence = context.getSequence();
  for (let c = 0; c < chunks; ++c) {
    await sequence.clearHistory();
    const window = tokens.slice(c * options.ctx, (c + 1) * options.ctx);
    const input = window.map((t, i) => (i >= first && i < options.ctx - 1 ? [t, { generateNext: { logits: true } }] : t));
    const output = await sequence.controlledEvaluate(input);
    for (let i = first; i < options.ctx - 1; ++i) rows.push(logSoftmax(output[i].next.logits, vocab));
  }
  sequence.dispose();
  await context.dispose();
  delete process.env.LLAMA_ATTN_ROT_DISABLE;
  return rows;
}

function targets() {
  const first = options.ctx / 2 | 0;
  const out = [];
  for (let c = 0; c < chunks; ++c) for (let i = first; i < options.ctx - 1; ++i) out.push(tokens[c * options.ctx + i + 1]);
  return out;
}

const next = targets();
const perplexity = (rows) => Math.exp(-rows.reduce((sum, row, i) => sum + row[next[i]], 0) / rows.length);
const base = await evaluate('f16', 'f16', true);
const result = { scored: base.length, base: { ppl: perplexity(base) }, runs: [] };
for (const run of options.runs) {
  const rows = await evaluate(run.k, run.v, run.rot);
  let kld = 0;
  for (let i = 0; i < rows.length; ++i) {
    let sum = 0;
    for (let t = 0; t < vocab; ++t) if (base[i][t] > -Infinity) sum += Math.exp(base[i][t]) * (base[i][t] - rows[i][t]);
    kld += sum;
  }
  result.runs.push({ k: run.k, v: run.v, rot: run.rot, ppl: perplexity(rows), kld: kld / rows.length });
}
console.log(JSON.stringify(result));
await model.dispose();
await llama.dispose();
