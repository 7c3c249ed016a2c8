// Runs the project's non-UI ArkTS (src/main/ets: InferenceService, ModelManager, Platform, ...) in
// Node.js: each .ets file is transpiled with ohos-typescript's transpileModule when first
// imported (ArkTS without UI syntax is TypeScript), then evaluated as CommonJS. 'lib<name>.so'
// resolves to the loaded addon; a @kit.* / @ohos.* import is refused, because those are reached
// only through the Platform interface, which the tests replace with TestPlatform.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

export const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export function loadTypescript() {
  const dir = process.env.HMBUILD_OHOS_TYPESCRIPT;
  if (!dir) throw new Error('HMBUILD_OHOS_TYPESCRIPT is not set; run these tests with `hmbuild test`');
  return createRequire(import.meta.url)(dir);
}

/** Returns a function loading src/main/ets/<relative path without .ets> with `addon` as the library. */
export function etsLoader(addon) {
  const ts = loadTypescript();
  const cache = new Map();
  const native = { __esModule: true, default: addon };
  function load(file) {
    const cached = cache.get(file);
    if (cached) return cached.exports;
    const out = ts.transpileModule(readFileSync(file, 'utf8'), {
      fileName: file.replace(/\.ets$/, '.ts'),
      reportDiagnostics: true,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2021 },
    });
    const errors = (out.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
    if (errors.length) {
      throw new Error(`${file}: ${ts.flattenDiagnosticMessageText(errors[0].messageText, '\n')}`);
    }
    const module = { exports: {} };
    cache.set(file, module);
    const req = (spec) => {
      if (/^lib[a-z0-9_]+\.so$/.test(spec)) return native;
      if (spec.startsWith('@kit.') || spec.startsWith('@ohos.')) {
        throw new Error(`${file} imports ${spec}: system modules must be reached through platform/Platform.ets`);
      }
      if (spec.startsWith('.')) return load(resolve(dirname(file), spec) + '.ets');
      throw new Error(`${file} imports ${spec}, which the Node tests do not provide`);
    };
    const wrapper = vm.runInThisContext(`(function (exports, require, module) {${out.outputText}\n})`, { filename: file });
    wrapper(module.exports, req, module);
    return module.exports;
  }
  return (relative) => load(join(projectRoot, 'src', 'main', 'ets', `${relative}.ets`));
}
