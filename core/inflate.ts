/**
 * @module Gunzip into the caller's buffer: node's zlib driven synchronously, step by step, writing
 * into a buffer the caller owns and reuses (core/archive.ts reuses one of 256 KiB for a
 * whole archive).
 *
 * Why not zlib.createGunzip(): a zlib stream allocates a new output buffer for every chunk it
 * inflates, and V8 frees such buffers only at a young-generation collection, which their external
 * bytes trigger past ~32 MB; glibc then keeps the freed pages. Reading a 1 GiB expansion through
 * it left the hub ~35-60 MB larger for good. Here nothing is allocated per chunk.
 *
 * It drives the stream's native handle (`_handle.writeSync`, `_writeState`): node internals, the
 * ones zlib's own sync functions use (and minizlib, which tar depends on, uses them too). The node
 * they belong to is the one in the executable; core/archive.test.ts fails if they change.
 */
import zlib from 'node:zlib';

interface NativeZlib {
  writeSync(
    flush: number,
    input: Buffer,
    inOff: number,
    inLen: number,
    out: Buffer,
    outOff: number,
    outLen: number,
  ): void;
}

export class GunzipInto {
  private readonly stream = zlib.createGunzip();
  private readonly handle = (this.stream as unknown as { _handle: NativeZlib })._handle;
  /** [output bytes still free, input bytes not consumed], as the last step left them. */
  private readonly state = (this.stream as unknown as { _writeState: Uint32Array })._writeState;

  constructor() {
    // A bad stream destroys the zlib stream with the error (`errored`, read after each step) and
    // emits it later: heard here so it is not an uncaught one.
    this.stream.on('error', () => undefined);
  }

  /**
   * Inflates from `input` into `out[outOff..]` until the input is consumed or the output full;
   * `finish` at the end of the compressed data (input empty), which throws when it is truncated.
   * Returns the bytes consumed and produced; throws the zlib error on a bad stream.
   */
  step(input: Buffer, out: Buffer, outOff: number, finish = false): { used: number; made: number } {
    const outLen = out.length - outOff;
    const flush = finish ? zlib.constants.Z_FINISH : zlib.constants.Z_NO_FLUSH;
    this.handle.writeSync(flush, input, 0, input.length, out, outOff, outLen);
    if (this.stream.errored) throw this.stream.errored;
    return { used: input.length - this.state[1], made: outLen - this.state[0] };
  }

  /** Frees zlib's memory now rather than at a garbage collection. */
  close(): void {
    this.stream.close();
  }
}
