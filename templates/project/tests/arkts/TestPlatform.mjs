// The test double of src/main/ets/platform/Platform.ets: the only part of the ArkTS that the Node
// tests replace. Logs are captured, memory figures are set by the test, timers fire when the test
// says so, files and SHA-256 use Node's fs and crypto.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, lstatSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';

const GB = 1024 ** 3;
const enc = new TextEncoder();
const dec = new TextDecoder();

export class TestPlatform {
  constructor({ totalBytes = 8 * GB, availableBytes = 4 * GB } = {}) {
    this.memory = { totalBytes, availableBytes };
    this.logs = [];        // { level, message }
    this.timers = [];      // { id, delayMs, callback }
    this.renames = [];     // [from, to]
    this.onRename = null;  // (from, to) => void, called before the rename happens
    this.beforeFileOp = null;  // (op, path) => void before rename / remove / writeText; throw = a crash there
    this.nextTimer = 1;
  }

  log(level, message) { this.logs.push({ level, message }); }
  logText() { return this.logs.map((l) => l.message).join('\n'); }
  memoryInfo() { return { totalBytes: this.memory.totalBytes, availableBytes: this.memory.availableBytes }; }
  setTimer(delayMs, callback) {
    const id = this.nextTimer++;
    this.timers.push({ id, delayMs, callback });
    return id;
  }
  clearTimer(id) { this.timers = this.timers.filter((t) => t.id !== id); }
  /** Runs every pending timer now; returns how many ran. */
  fireTimers() {
    const due = this.timers;
    this.timers = [];
    for (const t of due) t.callback();
    return due.length;
  }
  now() { return performance.now(); }
  encodeUtf8(text) {
    const bytes = enc.encode(text);
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  }
  decodeUtf8(buffer) { return dec.decode(new Uint8Array(buffer)); }
  fileExists(path) { return existsSync(path); }
  isSymlink(path) {
    try { return lstatSync(path).isSymbolicLink(); } catch { return false; }
  }
  fileSize(path) {
    try { return statSync(path).size; } catch { return -1; }
  }
  rename(from, to) {
    if (this.beforeFileOp) this.beforeFileOp('rename', to);
    if (this.onRename) this.onRename(from, to);
    renameSync(from, to);
    this.renames.push([from, to]);
  }
  remove(path) {
    if (this.beforeFileOp) this.beforeFileOp('remove', path);
    rmSync(path, { force: true });
  }
  readText(path) { return readFileSync(path, 'utf8'); }
  writeText(path, text) {
    if (this.beforeFileOp) this.beforeFileOp('writeText', path);
    writeFileSync(path, text);
  }
  sha256File(path) {
    return new Promise((resolve, reject) => {
      const h = createHash('sha256');
      createReadStream(path).on('error', reject).on('data', (c) => h.update(c)).on('end', () => resolve(h.digest('hex')));
    });
  }
}
