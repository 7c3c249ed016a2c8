// Declarations only: @ohos.hilog and @ohos.hidebug as re-exported by @kit.PerformanceAnalysisKit.
export declare namespace hilog {
  function debug(domain: number, tag: string, format: string, ...args: (string | number | boolean)[]): void;
  function info(domain: number, tag: string, format: string, ...args: (string | number | boolean)[]): void;
  function warn(domain: number, tag: string, format: string, ...args: (string | number | boolean)[]): void;
  function error(domain: number, tag: string, format: string, ...args: (string | number | boolean)[]): void;
  function fatal(domain: number, tag: string, format: string, ...args: (string | number | boolean)[]): void;
  function isLoggable(domain: number, tag: string, level: number): boolean;
}
export declare namespace hidebug {
  /** System memory in KB (API 12). */
  interface SystemMemInfo {
    totalMem: bigint;
    freeMem: bigint;
    availableMem: bigint;
  }
  function getSystemMemInfo(): SystemMemInfo;
  function getPss(): bigint;
}
