// Runs OpenHarmony's ArkTS linter (ArkTSLinter_1_1 of the npm package ohos-typescript, the
// TypeScript fork ets-loader uses) over a project's .ets files and prints one JSON object:
//   {"problems": [{"file", "line", "column", "rule", "severity", "message"}], "files": [...]}
// hmbuild/arkts_lint.py starts it as: node arkts_lint.mjs CONFIG.json, where the config names
//   typescript   path of the ohos-typescript package folder
//   root         the project folder (paths in the output are relative to it)
//   files        the .ets files to lint (absolute)
//   extraFiles   declaration files the program needs (system-module stubs), not linted
//   paths        compilerOptions.paths (module name -> declaration file), e.g. 'lib<name>.so'
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const require = createRequire(import.meta.url);
const ts = require(config.typescript);

// What ets-loader passes as compilerOptions.ets (compile_info / ETS_COMPILER_OPTIONS): which
// decorators exist, which methods are UI builders, which names are ArkUI components and how their
// attribute chains are typed. Only the components the declarations know are listed; the linter
// and the checker treat `Column() { ... }.width(...)` as a component call through these.
const components = ['Blank', 'Button', 'Column', 'Divider', 'Row', 'Scroll', 'Text', 'TextArea', 'TextInput', 'ForEach'];
const ets = {
  emitDecorators: ['Entry', 'Component', 'State', 'Prop', 'Link', 'Provide', 'Consume', 'StorageLink',
    'StorageProp', 'Builder', 'BuilderParam', 'Observed', 'ObjectLink', 'Require', 'Sendable']
    .map((name) => ({ name, emitParameters: ['Entry', 'Consume', 'Provide', 'StorageLink', 'StorageProp'].includes(name) })),
  propertyDecorators: ['Link', 'Prop', 'ObjectLink', 'Consume'].map((name) => ({ name, needInitialization: false })),
  render: { method: ['build', 'pageTransition'], decorator: ['Builder', 'LocalBuilder'] },
  components,
  extend: {
    decorator: ['Extend', 'AnimatableExtend'],
    components: components.map((name) => ({ name, type: `${name}Attribute`, instance: `${name}Instance` })),
  },
  styles: {
    decorator: 'Styles',
    component: { name: 'Common', type: 'T', instance: 'CommonInstance' },
    property: 'stateStyles',
  },
  concurrent: { decorator: 'Concurrent' },
  customComponent: 'CustomComponent',
  syntaxComponents: { paramsUICallback: ['ForEach'], attrUICallback: [] },
  libs: [],
};

const options = {
  target: ts.ScriptTarget.ES2021,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.NodeJs,
  lib: ['lib.es2021.d.ts'],
  types: [],
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  experimentalDecorators: true,
  allowSyntheticDefaultImports: true,
  // What ets-loader sets when it lints: .so imports are then resolved against their .d.ts instead
  // of being left untyped with warning 28014.
  needDoArkTsLinter: true,
  allowJs: false,
  baseUrl: config.root,
  paths: config.paths || {},
  ets,
  compatibleSdkVersion: 12,
  compatibleSdkVersionStage: 'beta3',
  // A fresh program each run: no .tsbuildinfo is read or written.
  incremental: false,
};

const rootNames = [...config.files, ...(config.extraFiles || [])];
const host = ts.createIncrementalCompilerHost(options);
const builder = ts.createIncrementalProgramForArkTs({ rootNames, options, host });
// The linter reports ArkTS rules (and what strict mode adds); plain type errors are what the
// compiler itself reports, as ets-loader does next to the linter: both count.
const program = builder.getProgram();
const compilerDiagnostics = [];
for (const file of config.files) {
  const sf = program.getSourceFile(file);
  if (!sf) continue;
  compilerDiagnostics.push(...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf));
}
compilerDiagnostics.push(...program.getGlobalDiagnostics(), ...program.getOptionsDiagnostics());
const diagnostics = [...compilerDiagnostics,
  ...ts.ArkTSLinter_1_1.runArkTSLinter(builder, undefined, undefined, 'ArkTS_1_1')];

const linted = new Set(config.files.map((f) => ts.normalizePath ? ts.normalizePath(f) : f));
const problems = [];
for (const d of diagnostics) {
  const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
  const m = /\((arkts-[a-z0-9-]+)\)\s*$/.exec(text);
  const { line, character } = d.file ? d.file.getLineAndCharacterOfPosition(d.start || 0) : { line: 0, character: 0 };
  problems.push({
    file: d.file ? relative(config.root, d.file.fileName) : '',
    line: line + 1,
    column: character + 1,
    rule: m ? m[1] : `TS${d.code}`,
    severity: d.category === ts.DiagnosticCategory.Error ? 'error' : 'warning',
    message: m ? text.slice(0, m.index).trim() : text,
    linted: d.file ? linted.has(d.file.fileName) : false,
  });
}
// Type errors the checker finds outside the linted files (in a stub, say) are reported too:
// they mean the program the linter saw was not the one the app builds.
process.stdout.write(JSON.stringify({ problems, files: config.files.map((f) => relative(config.root, f)) }) + '\n');
