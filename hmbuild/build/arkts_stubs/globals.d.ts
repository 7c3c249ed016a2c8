// Declarations only: globals the ArkTS runtime provides (ets/api/@internal/full/global.d.ts).
declare function setTimeout(handler: () => void, delay?: number): number;
declare function clearTimeout(timeoutID?: number): void;
declare namespace console {
  function info(message: string): void;
  function warn(message: string): void;
  function error(message: string): void;
}
