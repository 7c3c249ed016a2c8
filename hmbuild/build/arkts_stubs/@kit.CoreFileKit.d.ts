// Declarations only: @ohos.file.fs (as fileIo) and @ohos.file.hash from @kit.CoreFileKit.
export declare namespace fileIo {
  namespace OpenMode {
    const READ_ONLY: number;
    const WRITE_ONLY: number;
    const READ_WRITE: number;
    const CREATE: number;
    const TRUNC: number;
    const APPEND: number;
  }
  interface File {
    readonly fd: number;
    readonly path: string;
    readonly name: string;
  }
  interface Stat {
    readonly size: number;
    readonly mtime: number;
    isFile(): boolean;
    isDirectory(): boolean;
    isSymbolicLink(): boolean;
  }
  function accessSync(path: string): boolean;
  function statSync(file: string | number): Stat;
  /** As statSync, but a symbolic link describes itself. */
  function lstatSync(path: string): Stat;
  function renameSync(oldPath: string, newPath: string): void;
  function unlinkSync(path: string): void;
  function mkdirSync(path: string, recursion?: boolean): void;
  function openSync(path: string, mode?: number): File;
  function closeSync(file: number | File): void;
  function writeSync(fd: number, buffer: ArrayBuffer | string): number;
  function fsyncSync(fd: number): void;
  function readTextSync(filePath: string): string;
}
export declare namespace hash {
  /** Upper-case hex digest; algorithm 'md5' | 'sha1' | 'sha256'. */
  function hash(path: string, algorithm: string): Promise<string>;
}
