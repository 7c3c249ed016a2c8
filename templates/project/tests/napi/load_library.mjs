// Loads the built lib<name>.so into this Node.js. require() only accepts *.node files, so the
// OHOS file name goes through process.dlopen; hmbuild passes the path in HMBUILD_LIBRARY.
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function loadLibrary() {
  const path = process.env.HMBUILD_LIBRARY;
  if (!path) throw new Error('HMBUILD_LIBRARY is not set; run these tests with `hmbuild test`');
  const mod = { exports: {} };
  process.dlopen(mod, path);
  return mod.exports;
}

// Writes a minimal valid GGUF v3 file (one metadata key, one F32 tensor) and returns its path.
export function writeTinyGguf(dir = mkdtempSync(join(tmpdir(), 'hmbuild-napi-'))) {
  const parts = [];
  const u32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v); parts.push(b); };
  const u64 = (v) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); parts.push(b); };
  const str = (s) => { const b = Buffer.from(s, 'utf8'); u64(b.length); parts.push(b); };
  parts.push(Buffer.from('GGUF', 'latin1'));
  u32(3);        // version
  u64(1);        // tensor count
  u64(1);        // metadata key count
  str('general.architecture'); u32(8); str('llama');  // 8 = string
  str('w'); u32(1); u64(32); u32(0); u64(0);          // 1-D F32 tensor of 32 at offset 0
  let size = parts.reduce((n, b) => n + b.length, 0);
  parts.push(Buffer.alloc((32 - (size % 32)) % 32));  // data section aligned to 32
  const data = Buffer.alloc(32 * 4);
  for (let i = 0; i < 32; i++) data.writeFloatLE(i * 0.5, i * 4);
  parts.push(data);
  const path = join(dir, 'tiny.gguf');
  writeFileSync(path, Buffer.concat(parts));
  return path;
}
