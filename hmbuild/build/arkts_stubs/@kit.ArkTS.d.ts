// Declarations only: the part of @ohos.util (from @kit.ArkTS) the templates use.
export declare namespace util {
  class TextEncoder {
    constructor(encoding?: string);
    encodeInto(input?: string): Uint8Array;
  }
  interface DecodeToStringOptions {
    stream?: boolean;
  }
  class TextDecoder {
    static create(encoding?: string): TextDecoder;
    decodeToString(input: Uint8Array, options?: DecodeToStringOptions): string;
  }
}
