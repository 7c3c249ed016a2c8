// verifyModel(path, sha256): the native SHA-256 that ModelManager checks a downloaded model with.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadLibrary, writeTinyGguf } from './load_library.mjs';

const lib = loadLibrary();
const model = process.env.HMBUILD_TEST_MODEL;
const MODEL_SHA256 = 'a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818';
const needsModel = { skip: model ? false : 'HMBUILD_TEST_MODEL is not set' };
const dir = mkdtempSync(join(tmpdir(), 'hmbuild-verify-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const ABC = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';  // FIPS 180-4 "abc"

function fileWith(name, content) {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

async function expectRejection(promise, code, type = Error) {
  assert.ok(promise instanceof Promise, 'verifyModel must return a promise, even for bad arguments');
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof type, `expected ${type.name}, got ${err}`);
    assert.equal(err.code, code);
    assert.ok(err.message.length > 0);
    return true;
  });
}

test('the real model matches its published SHA-256', needsModel, async () => {
  const pending = lib.verifyModel(model, MODEL_SHA256);
  assert.ok(pending instanceof Promise);
  assert.equal(await pending, true);
});

test('agrees with node:crypto on small files, digest in either case', async () => {
  const tiny = writeTinyGguf(dir);
  const digest = createHash('sha256').update(readFileSync(tiny)).digest('hex');
  assert.equal(await lib.verifyModel(tiny, digest), true);
  assert.equal(await lib.verifyModel(tiny, digest.toUpperCase()), true);
  const oneDigitOff = digest.slice(0, -1) + (digest.endsWith('0') ? '1' : '0');
  assert.equal(await lib.verifyModel(tiny, oneDigitOff), false);
  assert.equal(await lib.verifyModel(fileWith('abc.bin', 'abc'), ABC), true);
  assert.equal(await lib.verifyModel(fileWith('empty.bin', ''), ABC), false);
});

test('several verifications run concurrently and each settles with its own answer', async () => {
  const paths = [0, 1, 2, 3, 4].map((i) => fileWith(`f${i}.bin`, Buffer.alloc(200000 + i, i)));
  const digests = paths.map((_, i) => createHash('sha256').update(Buffer.alloc(200000 + i, i)).digest('hex'));
  const results = await Promise.all(paths.map((p, i) => lib.verifyModel(p, digests[(i + (i % 2)) % 5])));
  assert.deepEqual(results, [true, false, true, false, true]);
});

test('a file that cannot be read rejects with MODEL_LOAD_FAILED', async () => {
  await expectRejection(lib.verifyModel(join(dir, 'missing.gguf'), ABC), 'MODEL_LOAD_FAILED');
  await expectRejection(lib.verifyModel(dir, ABC), 'MODEL_LOAD_FAILED');
});

test('bad arguments reject with INVALID_ARGUMENT as a TypeError', async () => {
  const path = fileWith('abc2.bin', 'abc');
  for (const args of [[42, ABC], [undefined, ABC], ['', ABC], [path], [path, ABC.slice(1)], [path, ABC + '0'],
                      [path, 'g'.repeat(64)], [path, 123], [path, null]]) {
    await expectRejection(lib.verifyModel(...args), 'INVALID_ARGUMENT', TypeError);
  }
});
