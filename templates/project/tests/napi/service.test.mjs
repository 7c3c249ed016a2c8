// The app-side ArkTS (InferenceService, ModelManager) run in Node.js against the real library and
// the real model: src/main/ets/*.ets are transpiled with ohos-typescript at load time
// (tests/arkts/load_ets.mjs); only platform/Platform.ets is replaced, by tests/arkts/TestPlatform.mjs.
// Small contexts and few tokens keep it quick under qemu-aarch64.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { loadLibrary } from './load_library.mjs';
import { etsLoader } from '../arkts/load_ets.mjs';
import { TestPlatform } from '../arkts/TestPlatform.mjs';

const MB = 1024 * 1024;
const GB = 1024 * MB;
const lib = loadLibrary();
const model = process.env.HMBUILD_TEST_MODEL;
const needsModel = { skip: model ? false : 'HMBUILD_TEST_MODEL is not set' };

// The addon as the ArkTS sees it, counting the calls that cross NAPI.
const calls = { init: 0, inferAsync: 0, classifyAsync: 0, warmup: 0 };
const lastArgs = {};
const native = { ...lib };
for (const name of Object.keys(calls)) {
  native[name] = (...args) => { calls[name]++; lastArgs[name] = args; return lib[name](...args); };
}
const load = etsLoader(native);
const { InferenceService, ServiceError, PromptTemplate, SUMMARY_TEMPLATE } = load('InferenceService');
const { ModelManager } = load('ModelManager');
const { DEVICE_CLASSES } = load('DeviceClasses');
const { INTENT } = load('Intents');

const row = (name, contextSize, kvCacheType, minTotalRamGb = 0, minAvailableMb = 0) =>
  ({ name, minTotalRamGb, modelFile: model ? basename(model) : 'missing.gguf', contextSize, kvCacheType, minAvailableMb });
const SMALL = [row('test', 128, 'q8_0')];
const MOON = 'In 1969, the first human to walk on the moon was';

function service(platform = new TestPlatform(), options = {}) {
  const s = new InferenceService(platform);
  // The 15 s default timeout is out of reach unless a test sets one: under qemu -cpu cortex-a53 a
  // cold first request alone takes ~20 s, and only the timeout tests may see degraded results.
  s.init({ modelDir: model ? dirname(model) : '/nonexistent', deviceClasses: SMALL, threads: 2, timeoutMs: 600000,
           ...options });
  return s;
}

async function rejectsWith(promise, code) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof ServiceError, `expected ServiceError, got ${err}`);
    assert.equal(err.code, code);
    return true;
  });
}

test('the transpiled ArkTS uses no system module directly, and the device classes come from hmbuild.toml', () => {
  assert.equal(typeof InferenceService, 'function');
  assert.deepEqual(DEVICE_CLASSES.map((c) => c.name), ['large', 'medium', 'small']);
  assert.ok(DEVICE_CLASSES.every((c, i) => i === 0 || c.minTotalRamGb < DEVICE_CLASSES[i - 1].minTotalRamGb));
});

test('the summary template is split once and only the note is substituted', () => {
  const t = new PromptTemplate(SUMMARY_TEMPLATE, '{note}');
  const a = t.render('first');
  const b = t.render('second');
  const at = SUMMARY_TEMPLATE.indexOf('{note}');
  assert.equal(a.slice(0, at), b.slice(0, at));
  assert.equal(a, SUMMARY_TEMPLATE.replace('{note}', 'first'));
  assert.throws(() => new PromptTemplate('{note} {note}', '{note}'), (e) => e.code === 'INVALID_ARGUMENT');
});

test('past one running + maxPending waiting, the service answers BUSY without crossing NAPI', needsModel, async () => {
  const platform = new TestPlatform();
  const s = service(platform, { maxPending: 1 });
  const before = calls.inferAsync;
  const first = s.infer(MOON, { maxTokens: 2 });
  const second = s.infer(MOON, { maxTokens: 2 });
  await rejectsWith(s.infer(MOON, { maxTokens: 2 }), 'BUSY');
  assert.equal(calls.inferAsync - before, 2, 'the refused request never reached the library');
  const [a, b] = await Promise.all([first, second]);
  assert.match(a.text, /Neil/);
  assert.equal(a.text, b.text);
  assert.equal(s.metrics().busyRejections, 1);
  // Settled requests free their places.
  assert.match((await s.infer(MOON, { maxTokens: 2 })).text, /Neil/);
  s.release();
  await rejectsWith(s.infer(MOON), 'RELEASED');
});

test('a request past its timeout returns the partial text marked degraded', needsModel, async () => {
  const platform = new TestPlatform();
  const s = service(platform);
  const r = await s.infer(MOON, { maxTokens: 64, timeoutMs: 1 });
  assert.equal(r.degraded, true);
  assert.equal(r.metrics.degraded, 'timeout');
  assert.ok(r.metrics.outputTokens < 64);
  assert.equal(typeof r.text, 'string');
  assert.equal(s.metrics().timeouts, 1);
  assert.equal(s.metrics().degradations, 1);
  const ok = await s.infer(MOON, { maxTokens: 2 });
  assert.equal(ok.degraded, false);
  assert.match(platform.logText(), /degraded=timeout/);
  s.release();
});

test('warm-up runs a delay after the first render, once', needsModel, async () => {
  const platform = new TestPlatform({ availableBytes: 4 * GB });
  const s = service(platform, { lazyLoad: true });
  assert.equal(s.isLoaded(), false);
  assert.equal(platform.timers.length, 0, 'nothing is scheduled before the page renders');
  const warmups = calls.warmup;
  s.scheduleWarmup();
  s.scheduleWarmup();  // onPageShow after aboutToAppear: still one warm-up
  assert.equal(platform.timers.length, 1);
  assert.equal(platform.timers[0].delayMs, 2000);
  assert.equal(s.metrics().warmup, 'scheduled');
  assert.equal(s.isLoaded(), false, 'the model is not mapped before the delay');
  assert.equal(platform.fireTimers(), 1);
  assert.equal(await s.whenWarmedUp(), 'done');
  assert.equal(calls.warmup - warmups, 1);
  assert.equal(s.isLoaded(), true);
  s.release();
});

test('warm-up is skipped when available memory is low; the first request loads the model', needsModel, async () => {
  const platform = new TestPlatform({ availableBytes: 300 * MB });
  const s = service(platform, { lazyLoad: true, warmupDelayMs: 50 });
  const warmups = calls.warmup;
  s.scheduleWarmup();
  assert.equal(platform.timers[0].delayMs, 50);
  platform.fireTimers();
  assert.equal(await s.whenWarmedUp(), 'skipped-low-memory');
  assert.equal(calls.warmup, warmups);
  assert.equal(s.isLoaded(), false);
  assert.match(platform.logText(), /warmup skipped/);
  assert.match((await s.infer(MOON, { maxTokens: 2 })).text, /Neil/);
  assert.equal(s.isLoaded(), true);
  s.release();
});

test('OUT_OF_MEMORY steps down the device classes, counting each degradation', needsModel, async () => {
  const platform = new TestPlatform({ totalBytes: 16 * GB, availableBytes: 8 * GB });
  const classes = [row('huge', 4096, 'f16', 10), row('big', 2048, 'f16', 5), row('small', 128, 'q8_0', 0)];
  const s = new InferenceService(platform);
  // About 325 MB, 287 MB and 250 MB are needed: only the last row fits 270 MB.
  const chosen = s.init({ modelDir: dirname(model), deviceClasses: classes, threads: 2, memoryBudgetBytes: 270e6 });
  assert.equal(chosen.name, 'small');
  const m = s.metrics();
  assert.equal(m.deviceClass, 'small');
  assert.equal(m.deviceClassFallbacks, 2);
  assert.equal(m.degradations, 2);
  assert.equal((platform.logText().match(/reason=out_of_memory/g) || []).length, 2);
  assert.match((await s.infer(MOON, { maxTokens: 2 })).text, /Neil/);
  s.release();

  // Nothing fits: the failure is reported after the last row.
  const none = new InferenceService(new TestPlatform({ totalBytes: 16 * GB }));
  assert.throws(() => none.init({ modelDir: dirname(model), deviceClasses: classes, memoryBudgetBytes: 100e6 }),
    (e) => e instanceof ServiceError && e.code === 'OUT_OF_MEMORY');
});

test('the device class follows total RAM and steps down when available memory is low', needsModel, () => {
  const classes = [row('large', 128, 'f16', 10, 1024), row('medium', 128, 'q8_0', 5, 512), row('small', 128, 'q8_0', 0, 0)];
  const pick = (totalGb, availableMb) => {
    const s = new InferenceService(new TestPlatform({ totalBytes: totalGb * GB, availableBytes: availableMb * MB }));
    const name = s.init({ modelDir: dirname(model), deviceClasses: classes, lazyLoad: true }).name;
    const fallbacks = s.metrics().deviceClassFallbacks;
    s.release();
    return [name, fallbacks];
  };
  assert.deepEqual(pick(12, 4096), ['large', 0]);
  assert.deepEqual(pick(7.5, 4096), ['medium', 0]);
  assert.deepEqual(pick(3.7, 4096), ['small', 0]);
  assert.deepEqual(pick(12, 600), ['medium', 1]);
  assert.deepEqual(pick(12, 100), ['small', 2]);
});

test('metrics are logged for every request and never contain the user text', needsModel, async () => {
  const platform = new TestPlatform();
  const s = service(platform, { deviceClasses: [row('test', 256, 'q8_0')] });
  const note = 'Zebrafinch Okonkwo-7731 asked to move the dentist appointment to Thursday';
  const summary = await s.summarize(note, 4);
  const intent = await s.classify('Wake me up at 7 am, Zebrafinch', ['alarm', 'weather', 'music']);
  assert.equal(intent.label, 'alarm');
  const text = platform.logText();
  assert.match(text, /summarize class=test in_tokens=\d+ out_tokens=\d+ ttft_ms=[\d.]+ prefill_tps=[\d.]+ decode_tps=[\d.]+ peak_mb=[\d.]+ degraded=none degradations=0/);
  assert.match(text, /classify class=test/);
  assert.ok(summary.metrics.inputTokens > 10 && summary.metrics.peakRssBytes > 0);
  for (const secret of ['Zebrafinch', 'Okonkwo', '7731', 'dentist', 'Wake me']) {
    assert.ok(!text.includes(secret), `the log contains user text: ${secret}`);
  }
  const generated = summary.text.trim();
  if (generated.length >= 12) assert.ok(!text.includes(generated), 'the log contains generated text');
  s.release();
});

test('route() uses hmbuild.toml [intent]: its labels, examples and calibration in one native call', needsModel, async () => {
  assert.ok(INTENT.labels.length > 0 && INTENT.examples.every((e) => INTENT.labels.includes(e.label)));
  const s = service(undefined, { deviceClasses: [row('test', 256, 'q8_0')] });
  const before = calls.classifyAsync;
  const r = await s.route('Set an alarm for 7 am tomorrow');
  assert.equal(calls.classifyAsync, before + 1);
  const [, , labels, options] = lastArgs.classifyAsync;
  assert.deepEqual(labels, INTENT.labels);
  assert.deepEqual(options, { examples: INTENT.examples, calibrate: INTENT.calibrate });
  assert.equal(r.calibrated, INTENT.calibrate);
  assert.ok(INTENT.labels.includes(r.label) && r.scores.length === INTENT.labels.length);
  s.release();
});

test('route() answers the fallback label when the best one wins by less than minMargin', needsModel, async () => {
  const s = service(undefined, { deviceClasses: [row('test', 256, 'q8_0')] });
  const config = {
    labels: ['alarm', 'weather', 'music', 'note'],
    examples: [
      { text: 'Wake me up at half past six', label: 'alarm' },
      { text: 'Will it rain in Shanghai this afternoon?', label: 'weather' },
      { text: 'Play something relaxing by Debussy', label: 'music' },
      { text: 'Remember to buy milk and eggs', label: 'note' },
    ],
    calibrate: true, fallback: 'note', minMargin: 0.1,
  };
  const sure = await s.route('Set an alarm for 7 am tomorrow', config);
  assert.deepEqual([sure.label, sure.best, sure.fellBack, sure.calibrated], ['alarm', 'alarm', false, true]);
  const sorted = [...sure.scores].sort((a, b) => b - a);
  assert.ok(Math.abs(sure.margin - (sorted[0] - sorted[1])) < 1e-9 && sure.margin >= 0.1);
  // Without calibration the same text goes to the last example's label: the lean calibration removes.
  const raw = await s.route('Set an alarm for 7 am tomorrow', { ...config, calibrate: false });
  assert.deepEqual([raw.best, raw.calibrated], ['note', false]);
  const unsure = await s.route('Set an alarm for 7 am tomorrow', { ...config, minMargin: 100 });
  assert.deepEqual([unsure.label, unsure.best, unsure.fellBack], ['note', 'alarm', true]);
  const none = await s.route('Set an alarm for 7 am tomorrow', { ...config, fallback: '', minMargin: 100 });
  assert.deepEqual([none.label, none.fellBack], ['alarm', false]);
  s.release();
});

// ---- ModelManager

const sha256 = (data) => createHash('sha256').update(data).digest('hex');

test('a verified model replaces the old one in one rename; bad or partial files leave the old one usable', needsModel, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hmbuild-models-'));
  const platform = new TestPlatform();
  const manager = new ModelManager(platform, dir, 'gemma');
  assert.equal(manager.current(), undefined);

  // v1: the real model (a copy: a symbolic link out of the folder would be refused).
  const download1 = join(dir, 'download-1');
  copyFileSync(model, download1);
  const digest1 = await platform.sha256File(model);
  const v1 = await manager.install(download1, '1.0.0', digest1);
  assert.equal(manager.current().version, '1.0.0');
  assert.equal(manager.current().path, v1.path);
  const s = service(platform, { modelDir: undefined, modelPath: manager.current().path });
  assert.match((await s.infer(MOON, { maxTokens: 2 })).text, /Neil/);

  // A corrupt download: refused after hashing, removed, v1 untouched and still serving.
  const bad = join(dir, 'download-2');
  writeFileSync(bad, 'not the model');
  await assert.rejects(manager.install(bad, '2.0.0', sha256('something else')), (e) => e.code === 'DIGEST_MISMATCH');
  assert.equal(existsSync(bad), false);
  assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('.tmp')), []);
  assert.equal(manager.current().version, '1.0.0');
  assert.equal(existsSync(v1.path), true);
  assert.match((await s.infer(MOON, { maxTokens: 2 })).text, /Neil/);

  // A partial download (wrong size): refused before hashing and left for the app to resume.
  const partial = join(dir, 'download-3');
  const content3 = Buffer.from('version three of the weights');
  writeFileSync(partial, content3.subarray(0, 10));
  await assert.rejects(manager.install(partial, '3.0.0', sha256(content3), { expectedBytes: content3.length }),
    (e) => e.code === 'INCOMPLETE');
  assert.equal(existsSync(partial), true);
  assert.equal(manager.current().version, '1.0.0');
  assert.equal(await manager.verifyCurrent(), true);

  // A good download: until the pointer rename, v1 is current; after it, v3 is.
  writeFileSync(partial, content3);
  const pointer = join(dir, 'gemma.current');
  let currentAtSwitch = null;
  platform.onRename = (from, to) => { if (to === pointer) currentAtSwitch = manager.current().version; };
  const v3 = await manager.install(partial, '3.0.0', sha256(content3).toUpperCase(), { expectedBytes: content3.length });
  platform.onRename = null;
  assert.equal(currentAtSwitch, '1.0.0', 'the old model stays current until the rename');
  assert.equal(manager.current().version, '3.0.0');
  assert.equal(manager.current().sha256, sha256(content3));
  assert.deepEqual(readFileSync(v3.path), content3);
  assert.equal(existsSync(v1.path), false, 'the old file goes after the switch');
  const order = platform.renames.slice(-3).map(([, to]) => basename(to));
  assert.deepEqual(order, ['gemma-3.0.0.gguf.tmp', 'gemma-3.0.0.gguf', 'gemma.current']);
  // The session opened on v1 keeps working: its mapping outlives the file name.
  assert.match((await s.infer(MOON, { maxTokens: 2 })).text, /Neil/);
  s.release();
  rmSync(dir, { recursive: true, force: true });
});

test('install refuses paths outside the model folder and leaves those files alone', async () => {
  const root = mkdtempSync(join(tmpdir(), 'hmbuild-paths-'));
  const dir = join(root, 'models');
  const elsewhere = join(root, 'elsewhere');
  mkdirSync(dir);
  mkdirSync(elsewhere);
  const secret = join(elsewhere, 'secret.gguf');
  writeFileSync(secret, 'not yours');
  const digest = sha256('not yours');
  symlinkSync(secret, join(dir, 'link-out'));
  symlinkSync(elsewhere, join(dir, 'sub-link'));
  mkdirSync(join(dir, 'downloads'));
  const platform = new TestPlatform();
  const manager = new ModelManager(platform, dir, 'm');
  for (const path of [secret, '../elsewhere/secret.gguf', join(dir, '..', 'elsewhere', 'secret.gguf'),
    join(dir, 'downloads', '..', '..', 'elsewhere', 'secret.gguf'), 'link-out', join(dir, 'link-out'),
    join(dir, 'sub-link', 'secret.gguf'), dir, dir + '/', '', './link-out']) {
    await assert.rejects(manager.install(path, '1', digest), (e) => e.code === 'INVALID_PATH', `accepted ${path}`);
  }
  assert.equal(readFileSync(secret, 'utf8'), 'not yours');
  assert.equal(manager.current(), undefined);
  assert.deepEqual(platform.renames, []);
  // Inside the folder (a subfolder, or a relative name) is fine.
  writeFileSync(join(dir, 'downloads', 'v1'), 'weights v1');
  assert.equal((await manager.install(join(dir, 'downloads', 'v1'), '1', sha256('weights v1'))).version, '1');
  writeFileSync(join(dir, 'v2'), 'weights v2');
  assert.equal((await manager.install('v2', '2', sha256('weights v2'))).version, '2');
  // A pointer file edited to name a file elsewhere is no model at all.
  writeFileSync(join(dir, 'm.current'), `2\n${sha256('not yours')}\n../elsewhere/secret.gguf\n`);
  assert.equal(manager.current(), undefined);
  rmSync(root, { recursive: true, force: true });
});

test('a switch interrupted at any file step leaves one complete model that loads', needsModel, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hmbuild-crash-'));
  const digest = await new TestPlatform().sha256File(model);
  const setup = new ModelManager(new TestPlatform(), dir, 'g');
  copyFileSync(model, join(dir, 'download'));
  await setup.install('download', '1', digest);
  // Count the file steps of one install, then crash at each of them in turn.
  let steps = 0;
  const counting = new TestPlatform();
  counting.beforeFileOp = () => { steps++; };
  copyFileSync(model, join(dir, 'download'));
  await new ModelManager(counting, dir, 'g').install('download', '2', digest);
  assert.ok(steps >= 5, `an install takes ${steps} file steps`);
  let version = 2;
  for (let crashAt = 0; crashAt < steps; crashAt++) {
    const platform = new TestPlatform();
    let n = 0;
    platform.beforeFileOp = (op, path) => {
      if (n++ === crashAt) throw new Error(`crash before ${op} ${basename(path)}`);
    };
    copyFileSync(model, join(dir, 'download'));
    const manager = new ModelManager(platform, dir, 'g');
    await assert.rejects(manager.install('download', String(version + 1), digest), /crash before/);
    platform.beforeFileOp = null;
    const current = manager.current();
    assert.ok(current !== undefined, `no model after a crash at step ${crashAt}`);
    assert.ok([String(version), String(version + 1)].includes(current.version));
    assert.equal(await manager.verifyCurrent(), true, `model incomplete after a crash at step ${crashAt}`);
    const s = service(platform, { modelDir: undefined, modelPath: current.path });
    assert.match((await s.infer(MOON, { maxTokens: 2 })).text, /Neil/);
    s.release();
    version = Number(current.version);
  }
  rmSync(dir, { recursive: true, force: true });
});

test('ModelManager with the native verifier (verifyModel) refuses a bad digest and accepts a good one', async () => {
  const { NativeVerifier } = load('NativeVerifier');
  const dir = mkdtempSync(join(tmpdir(), 'hmbuild-verify-'));
  const platform = new TestPlatform();
  const manager = new ModelManager(platform, dir, 'm', new NativeVerifier());
  const file = join(dir, 'download');
  writeFileSync(file, 'weights v1');
  await assert.rejects(manager.install(file, '1', sha256('other')), (e) => e.code === 'DIGEST_MISMATCH');
  assert.equal(manager.current(), undefined);
  writeFileSync(file, 'weights v1');
  assert.equal((await manager.install(file, '1', sha256('weights v1'))).version, '1');
  assert.equal(await manager.verifyCurrent(), true);
  rmSync(dir, { recursive: true, force: true });
});
