// The NAPI contract of lib<name>.so, run in a real Node.js (host, or aarch64 under qemu).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadLibrary, writeTinyGguf } from './load_library.mjs';

const lib = loadLibrary();
const model = writeTinyGguf();
const enc = new TextEncoder();
const dec = new TextDecoder();

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

test('init maps a GGUF model and returns a session id', () => {
  const id = lib.init(model);
  assert.ok(Number.isInteger(id) && id > 0);
  lib.release(id);
});

test('inferAsync runs off the JS thread and resolves an ArrayBuffer', async () => {
  const id = lib.init(model, { threads: 2 });
  const text = 'Summarise: 明天早上七点开会 🚀';
  const pending = lib.inferAsync(id, enc.encode(text).buffer);
  assert.ok(pending instanceof Promise);
  const out = await pending;
  assert.ok(out instanceof ArrayBuffer);
  assert.equal(dec.decode(out), text);  // the echo request path until the engine lands
  lib.release(id);
});

test('many concurrent requests on one session all complete with their own results', async () => {
  const id = lib.init(model);
  const inputs = Array.from({ length: 20 }, (_, i) => `request ${i} ` + 'x'.repeat(i * 1000));
  const outs = await Promise.all(inputs.map((s) => lib.inferAsync(id, enc.encode(s).buffer)));
  assert.deepEqual(outs.map((b) => dec.decode(b)), inputs);
  lib.release(id);
});

test('an empty input gives an empty ArrayBuffer', async () => {
  const id = lib.init(model);
  const out = await lib.inferAsync(id, new ArrayBuffer(0));
  assert.equal(out.byteLength, 0);
  lib.release(id);
});

test('a missing model file is MODEL_LOAD_FAILED naming the file', () => {
  const missing = join(dirname(model), 'nope.gguf');
  assert.throws(() => lib.init(missing), (err) => err.code === 'MODEL_LOAD_FAILED' && err.message.includes('nope.gguf'));
});

test('a file that is not GGUF is MODEL_LOAD_FAILED', () => {
  const bogus = join(dirname(model), 'bogus.gguf');
  writeFileSync(bogus, 'this is not a model at all, just some text');
  expectCode(() => lib.init(bogus), 'MODEL_LOAD_FAILED');
});

test('wrong argument types are TypeErrors with code INVALID_ARGUMENT', () => {
  expectCode(() => lib.init(42), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.init(), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.init(model, 'fast'), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.init(model, { threads: -1 }), 'INVALID_ARGUMENT', TypeError);
  const id = lib.init(model);
  expectCode(() => lib.inferAsync(id, 'text, not a buffer'), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.inferAsync(id, [1, 2, 3]), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.inferAsync('1', new ArrayBuffer(1)), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.inferAsync(id), 'INVALID_ARGUMENT', TypeError);
  expectCode(() => lib.release({}), 'INVALID_ARGUMENT', TypeError);
  lib.release(id);
});

test('release twice is fine and use after release is RELEASED', () => {
  const id = lib.init(model);
  lib.release(id);
  lib.release(id);
  expectCode(() => lib.inferAsync(id, new ArrayBuffer(4)), 'RELEASED');
});

test('a request queued before release settles with RELEASED or its result, never a crash', async () => {
  const id = lib.init(model);
  const pending = lib.inferAsync(id, enc.encode('late').buffer);
  lib.release(id);
  try {
    assert.equal(dec.decode(await pending), 'late');
  } catch (err) {
    assert.equal(err.code, 'RELEASED');
  }
});
