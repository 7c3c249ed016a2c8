// A bounded stress run of lib<name>.so in one Node.js process: rounds of mixed calls fired
// together at one session (infer, classify, cancel, bad arguments), with release and re-init
// every few rounds. Every promise must settle with a result or a known code, BUSY must appear only
// past the queue bound, RSS must come back to its plateau, and the process must survive.
// HMBUILD_STRESS_ROUNDS sets the rounds (default 40 on x86_64, 4 under qemu-aarch64).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadLibrary } from './load_library.mjs';

const lib = loadLibrary();
const model = process.env.HMBUILD_TEST_MODEL;
const needsModel = { skip: model ? false : 'HMBUILD_TEST_MODEL is not set' };
const enc = new TextEncoder();
const buf = (s) => enc.encode(s).buffer;
const ROUNDS = Number(process.env.HMBUILD_STRESS_ROUNDS ?? (process.arch === 'x64' ? 40 : 4));
const PER_ROUND = 50;
const MAX_PENDING = 3;
const REINIT_EVERY = 5;
const KNOWN = new Set(['BUSY', 'CANCELLED', 'RELEASED', 'INVALID_ARGUMENT']);
const PROMPTS = ['The capital of France is', 'Set an alarm for 7 am', 'def add(a, b):', '1, 2, 3,',
  '\u4f60\u597d', 'Weather tomorrow?'];

// Settles or fails the test after ms: a promise that never settles is the bug this looks for.
function settleWithin(promises, ms) {
  let timer;
  const watchdog = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`a promise did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([Promise.allSettled(promises), watchdog]).finally(() => clearTimeout(timer));
}

test(`${ROUNDS} rounds of ${PER_ROUND} mixed calls: all settle, BUSY only past the bound, no leak, no crash`,
  needsModel, async () => {
    const opts = { contextSize: 128, threads: 2, maxPending: MAX_PENDING };
    let id = lib.init(model, opts);
    const counts = { ok: 0, calls: 0, sync_errors: 0, reinit: 0 };
    const codes = {};
    const rss = [];
    let seed = 12345;
    const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
    for (let round = 0; round < ROUNDS; round++) {
      if (round > 0 && round % REINIT_EVERY === 0) {
        lib.release(id);
        id = lib.init(model, opts);
        counts.reinit++;
        // The same point of the cycle each time: a fresh session that has answered one request.
        await lib.inferAsync(id, buf(PROMPTS[0]), { maxTokens: 1 });
        if (global.gc) global.gc();
        rss.push(process.memoryUsage().rss);
      }
      const queued = [];  // [kind, promise] in the order they were accepted or refused
      const cancelAt = rand(PER_ROUND);
      for (let i = 0; i < PER_ROUND; i++) {
        const kind = rand(10);
        const text = buf(PROMPTS[rand(PROMPTS.length)]);
        counts.calls++;
        try {
          if (kind < 5) {
            queued.push(lib.inferAsync(id, text, { maxTokens: 1 + rand(3), timeoutMs: rand(4) === 0 ? 1 : 60000 }));
          } else if (kind < 7) {
            queued.push(lib.classifyAsync(id, text, ['alarm', 'weather', 'music']));
          } else if (kind === 7) {
            lib.inferAsync(id, 'not a buffer');  // must throw, never queue
            assert.fail('a string prompt was accepted');
          } else if (kind === 8) {
            lib.classifyAsync(id, text, []);
            assert.fail('an empty label list was accepted');
          } else {
            queued.push(lib.warmup(id));
          }
        } catch (err) {
          if (err.code === 'ERR_ASSERTION') throw err;
          assert.equal(err.code, 'INVALID_ARGUMENT', `unexpected synchronous error ${err.code}: ${err.message}`);
          counts.sync_errors++;
        }
        if (i === cancelAt) lib.cancel(id);
      }
      const results = await settleWithin(queued, 120000);
      // Fired from an idle session in one tick: the first 1 + MAX_PENDING are accepted, the rest BUSY.
      results.forEach((r, k) => {
        const code = r.status === 'fulfilled' ? 'ok' : r.reason.code;
        if (r.status === 'rejected') assert.ok(KNOWN.has(code), `unknown error ${code}: ${r.reason.message}`);
        codes[code] = (codes[code] ?? 0) + 1;
        if (code === 'ok') counts.ok++;
        if (k < 1 + MAX_PENDING) assert.notEqual(code, 'BUSY', `request ${k} of a burst was BUSY inside the bound`);
        else assert.equal(code, 'BUSY', `request ${k} of a burst was not BUSY past the bound of ${1 + MAX_PENDING}`);
      });
    }
    lib.release(id);
    console.log(`# stress: ${counts.calls} calls, ${counts.ok} answered, ${counts.reinit} re-inits, ` +
      `${counts.sync_errors} bad-argument throws, codes ${JSON.stringify(codes)}, rss MB ` +
      rss.map((b) => Math.round(b / 1048576)).join(' '));
    assert.ok(counts.ok > 0, 'nothing was answered');
    assert.ok((codes.BUSY ?? 0) > 0, 'the queue bound was never reached');
    // Also under ASan: `hmbuild test --sanitize address` bounds its quarantine to 16 MB, so freed
    // memory held there cannot pass for a leak (measured: 380 385 359 363 359 359 363 MB).
    if (rss.length >= 4) {
      // Plateau: the early cycles' largest RSS; the last cycles must not climb past it by more
      // than allocator noise.
      const plateau = Math.max(...rss.slice(1, 3));
      const last = rss[rss.length - 1];
      assert.ok(last - plateau < 24 * 1048576,
        `RSS grew from ${Math.round(plateau / 1048576)} MB to ${Math.round(last / 1048576)} MB over ${counts.reinit} re-inits`);
    }
  });
