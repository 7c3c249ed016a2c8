// Feeds the malformed-model corpus (tests/malformed_models.py) to init() of a project's NAPI
// library inside this one Node process, then checks the process still serves a valid model.
//   HMBUILD_LIBRARY=lib<name>.so node malformed_models.mjs MANIFEST.json
// MANIFEST: {"valid": path, "passes": n, "variants": [{"name", "path"}, ...]}. Prints one JSON
// object: what init() did with each variant, the RSS and peak RSS around the loop, and the answers of the
// valid sessions afterwards; tests/test_malformed_models.py judges it.
import { readFileSync } from 'node:fs';

const mod = { exports: {} };
process.dlopen(mod, process.env.HMBUILD_LIBRARY);
const lib = mod.exports;
const manifest = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const options = { contextSize: 64, threads: 1 };
const prompt = new TextEncoder().encode('the moon').buffer;

function tryInit(path) {
  try {
    const id = lib.init(path, options);
    lib.release(id);
    return { loaded: true };
  } catch (err) {
    return { loaded: false, isError: err instanceof Error, code: err.code, message: err.message };
  }
}

async function answer(id) {
  const out = await lib.inferAsync(id, prompt, { maxTokens: 3 });
  return { isArrayBuffer: out instanceof ArrayBuffer, outputTokens: lib.stats(id).outputTokens };
}

// A session opened before the corpus must keep working while and after init() refuses it all.
const before = lib.init(manifest.valid, options);
const warm = await answer(before);
const rssBefore = process.memoryUsage().rss;
const peakBefore = process.resourceUsage().maxRSS * 1024;
const results = {};
for (let pass = 0; pass < manifest.passes; pass++) {
  for (const v of manifest.variants) results[v.name] = tryInit(v.path);
}
const rssAfter = process.memoryUsage().rss;
const peakAfter = process.resourceUsage().maxRSS * 1024;
const survivor = await answer(before);
lib.release(before);
const fresh = lib.init(manifest.valid, options);
const after = await answer(fresh);
lib.release(fresh);
process.stdout.write(JSON.stringify({ results, rssBefore, rssAfter, peakBefore, peakAfter, warm, survivor, after }) + '\n');
