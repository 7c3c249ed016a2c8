// The NAPI contract of lib<name>.so, run in a real Node.js (host, or aarch64 under qemu) with the
// real Gemma 3 270M model (hmbuild test passes its path in HMBUILD_TEST_MODEL).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadLibrary, writeTinyGguf } from './load_library.mjs';

const lib = loadLibrary();
const model = process.env.HMBUILD_TEST_MODEL;
const tiny = writeTinyGguf();
after(() => rmSync(dirname(tiny), { recursive: true, force: true }));
const enc = new TextEncoder();
const dec = new TextDecoder();
const needsModel = { skip: model ? false : 'HMBUILD_TEST_MODEL is not set' };
const small = { contextSize: 128, threads: 2 };
const MOON = 'In 1969, the first human to walk on the moon was';
const buf = (s) => enc.encode(s).buffer;

function expectCode(fn, code, type = Error) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof type, `expected ${type.name}, got ${err}`);
    assert.equal(err.code, code);
    assert.ok(err.message.length > 0);
    return true;
  });
}

test('exports exactly the contract', () => {
  assert.deepEqual(Object.keys(lib).sort(),
    ['cancel', 'chatAsync', 'classifyAsync', 'inferAsync', 'init', 'release', 'stats', 'verifyModel', 'warmup']);
});

test('inferAsync continues the prompt off the JS thread and resolves an ArrayBuffer', needsModel, async () => {
  const id = lib.init(model, small);
  const pending = lib.inferAsync(id, buf(MOON), { maxTokens: 3 });
  assert.ok(pending instanceof Promise);
  const out = await pending;
  assert.ok(out instanceof ArrayBuffer);
  assert.match(dec.decode(out), /Neil Armstrong/);
  const s = lib.stats(id);
  assert.equal(s.outputTokens, 3);
  assert.ok(s.inputTokens >= 10 && s.ttftMs > 0 && s.decodeTokensPerSec > 0 && s.prefillTokensPerSec > 0);
  assert.ok(s.peakRssBytes > 0 && s.threads >= 1 && typeof s.priorityRaised === 'boolean');
  assert.equal(s.degraded, 'none');
  lib.release(id);
});

test('the callback form delivers the result, and an error with an empty buffer', needsModel, async () => {
  const id = lib.init(model, small);
  const [out, err] = await new Promise((resolve) => {
    assert.equal(lib.inferAsync(id, buf(MOON), { maxTokens: 3 }, (r, e) => resolve([r, e])), undefined);
  });
  assert.equal(err, undefined);
  assert.match(dec.decode(out), /Neil Armstrong/);
  const [empty, e2] = await new Promise((resolve) => {
    lib.inferAsync(id, buf('word '.repeat(200)), {}, (r, e) => resolve([r, e]));
  });
  assert.equal(empty.byteLength, 0);
  assert.equal(e2.code, 'INVALID_ARGUMENT');
  lib.release(id);
});

test('onToken pieces arrive in order, before the result, and concatenate to it', needsModel, async () => {
  const id = lib.init(model, small);
  const pieces = [];
  const out = dec.decode(await lib.inferAsync(id, buf(MOON), { maxTokens: 6, onToken: (p) => pieces.push(p) }));
  assert.ok(pieces.length >= 3);
  assert.equal(pieces.join(''), out);
  lib.release(id);
});

test('requests on one session run in turn and each gets its own result', needsModel, async () => {
  const id = lib.init(model, small);
  const ask = (p) => lib.inferAsync(id, buf(p), { maxTokens: 3 }).then((b) => dec.decode(b));
  const b = 'def fibonacci(n):';
  const soloA = await ask(MOON);
  const soloB = await ask(b);
  assert.notEqual(soloA, soloB);
  assert.deepEqual(await Promise.all([ask(b), ask(MOON), ask(b)]), [soloB, soloA, soloB]);
  lib.release(id);
});

test('ten requests fired together with maxPending 3: one runs, three wait, six are BUSY', needsModel, async () => {
  const id = lib.init(model, { ...small, maxPending: 3 });
  const results = await Promise.allSettled(
    Array.from({ length: 10 }, () => lib.inferAsync(id, buf('The capital of France is'), { maxTokens: 1 })));
  const busy = results.filter((r) => r.status === 'rejected' && r.reason.code === 'BUSY');
  const done = results.filter((r) => r.status === 'fulfilled');
  assert.equal(busy.length, 6);
  assert.equal(done.length, 4);
  lib.release(id);
});

test('a request past its timeout resolves with what it has and is counted as degraded', needsModel, async () => {
  const id = lib.init(model, small);
  const out = await lib.inferAsync(id, buf(MOON), { maxTokens: 100, timeoutMs: 1 });
  assert.ok(out instanceof ArrayBuffer);
  const s = lib.stats(id);
  assert.equal(s.degraded, 'timeout');
  assert.equal(s.degradedCount, 1);
  assert.ok(s.outputTokens < 100);
  lib.release(id);
});

test('cancel stops the running request at the next token with CANCELLED', needsModel, async () => {
  const id = lib.init(model, small);
  let tokens = 0;
  const pending = lib.inferAsync(id, buf(MOON), { maxTokens: 100, onToken: () => { if (++tokens === 1) lib.cancel(id); } });
  await assert.rejects(pending, (err) => err.code === 'CANCELLED');
  assert.equal(lib.stats(id).degraded, 'cancelled');
  assert.ok(tokens < 100);
  lib.cancel(id);  // nothing running: nothing happens
  assert.match(dec.decode(await lib.inferAsync(id, buf(MOON), { maxTokens: 3 })), /Neil Armstrong/);
  lib.release(id);
});

test('release during a request cancels it, waits for the worker and frees; waiting ones get RELEASED', needsModel, async () => {
  const id = lib.init(model, small);
  let released = false;
  const running = lib.inferAsync(id, buf(MOON), {
    maxTokens: 100, onToken: () => { if (!released) { released = true; lib.release(id); } },
  });
  const waiting = lib.inferAsync(id, buf(MOON), { maxTokens: 2 });
  const [r, w] = await Promise.allSettled([running, waiting]);
  assert.ok(r.status === 'fulfilled' || r.reason.code === 'CANCELLED');
  assert.equal(w.status, 'rejected');
  assert.ok(['RELEASED', 'CANCELLED'].includes(w.reason.code));
  expectCode(() => lib.stats(id), 'RELEASED');
});

test('release twice is fine and every call after release is RELEASED', needsModel, () => {
  const id = lib.init(model, small);
  lib.release(id);
  lib.release(id);
  expectCode(() => lib.inferAsync(id, new ArrayBuffer(4)), 'RELEASED');
  expectCode(() => lib.classifyAsync(id, new ArrayBuffer(4), ['a']), 'RELEASED');
  expectCode(() => lib.warmup(id), 'RELEASED');
  expectCode(() => lib.stats(id), 'RELEASED');
  lib.cancel(id);
});

test('classifyAsync routes an alarm request to alarm', needsModel, async () => {
  const id = lib.init(model, { ...small, contextSize: 256 });
  const r = await lib.classifyAsync(id, buf('Set an alarm for 7 am tomorrow'), ['alarm', 'weather', 'music']);
  assert.equal(r.label, 'alarm');
  assert.equal(r.scores.length, 3);
  assert.ok(r.scores.every((s) => s < 0));
  assert.ok(r.scores[0] > r.scores[1] && r.scores[0] > r.scores[2]);
  lib.release(id);
});

// The notes-assistant example's few-shot rows (hmbuild.toml [[intent.example]]).
const INTENTS = ['alarm', 'weather', 'music', 'note'];
const EXAMPLES = [
  { text: 'Wake me up at half past six', label: 'alarm' },
  { text: 'Will it rain in Shanghai this afternoon?', label: 'weather' },
  { text: 'Play something relaxing by Debussy', label: 'music' },
  { text: 'Remember to buy milk and eggs', label: 'note' },
];

test('classifyAsync with examples and calibration: the lean towards the last example is taken out', needsModel, async () => {
  const id = lib.init(model, { ...small, contextSize: 256 });
  const text = buf('Set an alarm for 7 am tomorrow');
  // With the examples alone the base model leans to the last example's label: note wins raw.
  const raw = await lib.classifyAsync(id, text, INTENTS, { examples: EXAMPLES });
  assert.equal(raw.calibrated, false);
  assert.deepEqual(raw.scores, raw.rawScores);
  const cal = await lib.classifyAsync(id, text, INTENTS, { examples: EXAMPLES, calibrate: true });
  assert.equal(cal.calibrated, true);
  assert.equal(cal.label, 'alarm');
  assert.notEqual(raw.label, cal.label);
  raw.rawScores.forEach((s, i) => assert.ok(Math.abs(s - cal.rawScores[i]) < 1e-9));
  // The empty text's scores are what is subtracted, computed once for these labels and examples:
  // the same offsets for another text, and the same as classifying the empty text raw.
  const offsets = cal.rawScores.map((s, i) => s - cal.scores[i]);
  const other = await lib.classifyAsync(id, buf('Is it going to snow tomorrow?'), INTENTS, { examples: EXAMPLES, calibrate: true });
  assert.equal(other.label, 'weather');
  other.rawScores.forEach((s, i) => assert.ok(Math.abs(s - other.scores[i] - offsets[i]) < 1e-9));
  const empty = await lib.classifyAsync(id, new ArrayBuffer(0), INTENTS, { examples: EXAMPLES });
  empty.rawScores.forEach((s, i) => assert.ok(Math.abs(s - offsets[i]) < 1e-6, `${s} vs ${offsets[i]}`));
  lib.release(id);
});

test('warmup resolves and the next request still gives the same answer', needsModel, async () => {
  const id = lib.init(model, small);
  assert.equal(await lib.warmup(id), undefined);
  assert.match(dec.decode(await lib.inferAsync(id, buf(MOON), { maxTokens: 3 })), /Neil Armstrong/);
  lib.release(id);
});

test('stop strings end generation without being returned', needsModel, async () => {
  const id = lib.init(model, small);
  const out = dec.decode(await lib.inferAsync(id, buf(MOON), { maxTokens: 8, stop: ['.'] }));
  assert.equal(out, ' Neil Armstrong');
  lib.release(id);
});

test('invalid UTF-8 and control characters are cleaned; emoji and CJK pass', needsModel, async () => {
  const id = lib.init(model, small);
  const bytes = new Uint8Array([...enc.encode('会议 🚀 '), 0xff, 0x01, 0x1b, ...enc.encode(' note:')]);
  const out = await lib.inferAsync(id, bytes.buffer, { maxTokens: 2 });
  assert.ok(out instanceof ArrayBuffer);
  lib.release(id);
});

test('a prompt over the context size is INVALID_ARGUMENT naming the limit', needsModel, async () => {
  const id = lib.init(model, { contextSize: 16, threads: 1 });
  await assert.rejects(lib.inferAsync(id, buf('word '.repeat(40)), { maxTokens: 1 }),
    (err) => err.code === 'INVALID_ARGUMENT' && /16/.test(err.message));
  lib.release(id);
});

test('a memory budget below the model is OUT_OF_MEMORY with the breakdown', needsModel, () => {
  assert.throws(() => lib.init(model, { memoryBudgetBytes: 100e6 }),
    (err) => err.code === 'OUT_OF_MEMORY' && /weights/.test(err.message) && /KV cache/.test(err.message));
});

test('a missing model file is MODEL_LOAD_FAILED naming the file', () => {
  const missing = join(dirname(tiny), 'nope.gguf');
  assert.throws(() => lib.init(missing), (err) => err.code === 'MODEL_LOAD_FAILED' && err.message.includes('nope.gguf'));
});

test('a file that is not GGUF, or a GGUF that is no language model, is MODEL_LOAD_FAILED', () => {
  const bogus = join(dirname(tiny), 'bogus.gguf');
  writeFileSync(bogus, 'this is not a model at all, just some text');
  expectCode(() => lib.init(bogus), 'MODEL_LOAD_FAILED');
  expectCode(() => lib.init(tiny), 'MODEL_LOAD_FAILED');
});

test('wrong argument types are TypeErrors with code INVALID_ARGUMENT', needsModel, () => {
  const bad = (fn) => expectCode(fn, 'INVALID_ARGUMENT', TypeError);
  bad(() => lib.init(42));
  bad(() => lib.init());
  bad(() => lib.init(model, 'fast'));
  bad(() => lib.init(model, { threads: -1 }));
  bad(() => lib.init(model, { contextSize: 1.5 }));
  bad(() => lib.init(model, { kvCacheType: 'q4' }));
  bad(() => lib.init(model, { highPriority: 'yes' }));
  bad(() => lib.init(model, { maxPending: -1 }));
  const id = lib.init(model, small);
  bad(() => lib.inferAsync(id, 'text, not a buffer'));
  bad(() => lib.inferAsync(id, [1, 2, 3]));
  bad(() => lib.inferAsync('1', new ArrayBuffer(1)));
  bad(() => lib.inferAsync(id));
  bad(() => lib.inferAsync(id, new ArrayBuffer(1), { maxTokens: 0 }));
  bad(() => lib.inferAsync(id, new ArrayBuffer(1), { temperature: -1 }));
  bad(() => lib.inferAsync(id, new ArrayBuffer(1), { stop: 'x' }));
  bad(() => lib.inferAsync(id, new ArrayBuffer(1), { onToken: 5 }));
  bad(() => lib.inferAsync(id, new ArrayBuffer(1), 5));
  bad(() => lib.inferAsync(id, new ArrayBuffer(1), {}, 'not a function'));
  bad(() => lib.classifyAsync(id, new ArrayBuffer(1), 'alarm'));
  bad(() => lib.classifyAsync(id, new ArrayBuffer(1), []));
  bad(() => lib.classifyAsync(id, new ArrayBuffer(1), ['ok', 7]));
  bad(() => lib.classifyAsync(id, 'text', ['a']));
  bad(() => lib.classifyAsync(id, new ArrayBuffer(1), ['a'], 'calibrate'));
  bad(() => lib.classifyAsync(id, new ArrayBuffer(1), ['a'], { calibrate: 1 }));
  bad(() => lib.classifyAsync(id, new ArrayBuffer(1), ['a'], { examples: { text: 'x', label: 'a' } }));
  bad(() => lib.classifyAsync(id, new ArrayBuffer(1), ['a'], { examples: [{ text: 'x' }] }));
  bad(() => lib.classifyAsync(id, new ArrayBuffer(1), ['a'], { examples: [{ text: '', label: 'a' }] }));
  bad(() => lib.classifyAsync(id, new ArrayBuffer(1), ['a'], { examples: [{ text: 'x', label: 'b' }] }));
  bad(() => lib.classifyAsync(id, new ArrayBuffer(1), ['a'], { examples: Array(33).fill({ text: 'x', label: 'a' }) }));
  bad(() => lib.warmup());
  bad(() => lib.cancel(null));
  bad(() => lib.stats('x'));
  bad(() => lib.release({}));
  lib.release(id);
});
