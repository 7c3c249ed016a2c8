// The NAPI contract of lib<name>.so, run in a real Node.js (host, or aarch64 under qemu) with the
// real Gemma 3 270M model (hmbuild test passes its path in HMBUILD_TEST_MODEL).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadLibrary, writeTinyGguf } from './load_library.mjs';

const lib = loadLibrary();
const model = process.env.HMBUILD_TEST_MODEL;
const tiny = writeTinyGguf();
const enc = new TextEncoder();
const dec = new TextDecoder();
const needsModel = { skip: model ? false : 'HMBUILD_TEST_MODEL is not set' };
const small = { contextSize: 128, threads: 2 };

function expectCode(fn, code, type = Error) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof type, `expected ${type.name}, got ${err}`);
    assert.equal(err.code, code);
    assert.ok(err.message.length > 0);
    return true;
  });
}

test('exports exactly init, inferAsync and release', () => {
  assert.deepEqual(Object.keys(lib).sort(), ['inferAsync', 'init', 'release']);
});

test('init maps the model and returns a session id', needsModel, () => {
  const id = lib.init(model, small);
  assert.ok(Number.isInteger(id) && id > 0);
  lib.release(id);
});

test('inferAsync continues the prompt off the JS thread and resolves an ArrayBuffer', needsModel, async () => {
  const id = lib.init(model, small);
  const pending = lib.inferAsync(id, enc.encode('In 1969, the first human to walk on the moon was').buffer, { maxTokens: 3 });
  assert.ok(pending instanceof Promise);
  const out = await pending;
  assert.ok(out instanceof ArrayBuffer);
  assert.match(dec.decode(out), /Neil Armstrong/);
  lib.release(id);
});

test('requests on one session run in turn and each gets its own result', needsModel, async () => {
  const id = lib.init(model, small);
  const ask = (p) => lib.inferAsync(id, enc.encode(p).buffer, { maxTokens: 3 }).then((b) => dec.decode(b));
  const a = 'In 1969, the first human to walk on the moon was';
  const b = 'def fibonacci(n):';
  const soloA = await ask(a);
  const soloB = await ask(b);
  assert.notEqual(soloA, soloB);
  // Queued together, interleaved with the cached prefix changing under them: same greedy answers.
  assert.deepEqual(await Promise.all([ask(b), ask(a), ask(b)]), [soloB, soloA, soloB]);
  lib.release(id);
});

test('a prompt over the context size is INVALID_ARGUMENT naming the limit', needsModel, async () => {
  const id = lib.init(model, { contextSize: 16, threads: 1 });
  await assert.rejects(lib.inferAsync(id, enc.encode('word '.repeat(40)).buffer, { maxTokens: 1 }),
    (err) => err.code === 'INVALID_ARGUMENT' && /16/.test(err.message));
  lib.release(id);
});

test('a missing model file is MODEL_LOAD_FAILED naming the file', () => {
  const missing = join(dirname(tiny), 'nope.gguf');
  assert.throws(() => lib.init(missing), (err) => err.code === 'MODEL_LOAD_FAILED' && err.message.includes('nope.gguf'));
});

test('a file that is not GGUF is MODEL_LOAD_FAILED', () => {
  const bogus = join(dirname(tiny), 'bogus.gguf');
  writeFileSync(bogus, 'this is not a model at all, just some text');
  expectCode(() => lib.init(bogus), 'MODEL_LOAD_FAILED');
});

test('a valid GGUF that is not a language model is MODEL_LOAD_FAILED', () => {
  expectCode(() => lib.init(tiny), 'MODEL_LOAD_FAILED');
});

test('wrong argument types are TypeErrors with code INVALID_ARGUMENT', needsModel, () => {
  expectCode(() => lib.init(42), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.init(), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.init(model, 'fast'), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.init(model, { threads: -1 }), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.init(model, { contextSize: 1.5 }), 'INVALID_ARGUMENT', TypeError);
  const id = lib.init(model, small);
  expectCode(() => lib.inferAsync(id, 'text, not a buffer'), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.inferAsync(id, [1, 2, 3]), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.inferAsync('1', new ArrayBuffer(1)), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.inferAsync(id), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.inferAsync(id, new ArrayBuffer(1), { maxTokens: 0 }), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.inferAsync(id, new ArrayBuffer(1), 5), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.release({}), 'INVALID_ARGUMENT', TypeError);
  lib.release(id);
});

test('release twice is fine and use after release is RELEASED', needsModel, () => {
  const id = lib.init(model, small);
  lib.release(id);
  lib.release(id);
  expectCode(() => lib.inferAsync(id, new ArrayBuffer(4)), 'RELEASED');
});

test('a request queued before release settles with RELEASED or its result, never a crash', needsModel, async () => {
  const id = lib.init(model, small);
  const pending = lib.inferAsync(id, enc.encode('The capital of France is').buffer, { maxTokens: 2 });
  lib.release(id);
  try {
    assert.ok((await pending) instanceof ArrayBuffer);
  } catch (err) {
    assert.equal(err.code, 'RELEASED');
  }
});
