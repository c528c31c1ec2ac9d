/**
 * @module The malware scanner: a small client of ClamAV's clamd (`--scanner clamd:unix:PATH` or
 * `clamd:tcp:HOST:PORT`), or `none`. clamd's protocol: `zINSTREAM\0`, then the bytes as chunks
 * each prefixed by its length (4 bytes, big-endian), then a zero length; the answer is
 * `stream: OK\0` or `stream: SIGNATURE FOUND\0`. `zVERSION\0` answers
 * `ClamAV 1.4.6/27480/Mon Nov 24 ...`: the engine and the signature database version, recorded
 * with each verdict. A file over clamd's size settings is a permanent error of that file
 * (ScanLimitError), not a scanner that is down.
 *
 * Not scanned by path (`SCAN FILE`), which would spare StreamMaxLength: clamd runs as its own
 * user, which cannot read the hub's blob directory (0700), and MaxFileSize/MaxScanSize bound a
 * scan by path all the same, so the operator raises the settings either way.
 */
import fs from 'node:fs';
import net from 'node:net';

export type ScannerSpec =
  { kind: 'none' } | { kind: 'clamd'; target: { path: string } | { host: string; port: number }; label: string };

export const SCANNER_HELP = 'clamd:unix:PATH, clamd:tcp:HOST:PORT or none';

/** Parses the hub's `--scanner` flag; throws a message naming the forms. */
export function parseScanner(s: string): ScannerSpec {
  if (s === 'none') return { kind: 'none' };
  const unix = /^clamd:unix:(\/.+)$/.exec(s);
  if (unix) return { kind: 'clamd', target: { path: unix[1] }, label: s };
  const tcp = /^clamd:tcp:(.+):(\d{1,5})$/.exec(s);
  if (tcp && Number(tcp[2]) > 0 && Number(tcp[2]) < 65536)
    return { kind: 'clamd', target: { host: tcp[1].replace(/^\[|\]$/g, ''), port: Number(tcp[2]) }, label: s };
  throw new Error(`--scanner ${s}: use ${SCANNER_HELP} (e.g. clamd:unix:/run/clamav/clamd.ctl; the path is absolute)`);
}

export type Verdict = { clean: true } | { clean: false; signature: string };

/** clamd's settings that bound what it scans, with Debian's values (/etc/clamav/clamd.conf). */
export const CLAMD_LIMIT_SETTINGS = 'StreamMaxLength, MaxScanSize and MaxFileSize';

/**
 * clamd refused the file for its size, not for what is in it: no retry can help until its
 * settings change, so this is a permanent error for the file (it names the settings and the size
 * they need), never "scanner down, try later".
 */
export class ScanLimitError extends Error {
  constructor(
    readonly bytes: number,
    answer: string,
  ) {
    const mib = Math.ceil(bytes / 1024 ** 2);
    super(
      `clamd refused to scan the ${mib} MiB file for its size (it answered "${answer.slice(0, 120)}"): raise ${CLAMD_LIMIT_SETTINGS} in clamd.conf to at least ${mib + 1}M (Debian ships StreamMaxLength 25M, MaxFileSize 25M, MaxScanSize 100M) and restart clamd; docs/operations.md, "A malware scanner for agent releases"`,
    );
    this.name = 'ScanLimitError';
  }
}

/**
 * An answer that is about the file's size: INSTREAM over StreamMaxLength, or, with clamd's
 * `AlertExceedsMax yes`, a file over MaxFileSize/MaxScanSize reported as a Heuristics.Limits
 * "signature" (without that setting clamd skips such a file and answers OK: docs/operations.md).
 */
function limitAnswer(answer: string): boolean {
  return /size limit exceeded/i.test(answer) || /Heuristics\.Limits\.Exceeded/.test(answer);
}

/** Chunks sent to clamd; its StreamMaxLength (built in 100M, Debian's clamd.conf 25M) bounds the whole stream. */
const CHUNK_BYTES = 64 * 1024;
/** A scan of a large archive takes seconds; one that has said nothing for this long is given up (and retried). */
export const CLAMD_TIMEOUT_MS = 120_000;

export class ClamdClient {
  constructor(
    private readonly target: { path: string } | { host: string; port: number },
    private readonly timeoutMs = CLAMD_TIMEOUT_MS,
  ) {}

  /** Sends one command (and a file as INSTREAM chunks); resolves with clamd's answer. */
  private request(command: string, file?: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const sock =
        'path' in this.target ? net.connect(this.target.path) : net.connect(this.target.port, this.target.host);
      const where = 'path' in this.target ? this.target.path : `${this.target.host}:${this.target.port}`;
      const chunks: Buffer[] = [];
      let done = false;
      const finish = (err?: Error) => {
        if (done) return;
        done = true;
        sock.destroy();
        if (err) reject(err);
        else resolve(Buffer.concat(chunks).toString('utf8').replace(/\0+$/, '').trim());
      };
      sock.setTimeout(this.timeoutMs, () =>
        finish(new Error(`clamd at ${where} did not answer in ${this.timeoutMs / 1000}s`)),
      );
      sock.on('error', (err) => finish(new Error(`clamd at ${where} is unreachable: ${err.message}`, { cause: err })));
      sock.on('data', (c: Buffer) => {
        chunks.push(c);
        if (c.includes(0)) finish();
      });
      sock.on('end', () => finish());
      sock.on('connect', () => {
        sock.write(`z${command}\0`);
        if (!file) return;
        void (async () => {
          try {
            for await (const c of fs.createReadStream(file, { highWaterMark: CHUNK_BYTES }) as AsyncIterable<Buffer>) {
              if (done) return;
              const len = Buffer.alloc(4);
              len.writeUInt32BE(c.length);
              if (!sock.write(Buffer.concat([len, c]))) await new Promise((r) => sock.once('drain', r));
            }
            sock.write(Buffer.alloc(4));
          } catch (err) {
            finish(new Error(`reading ${file} for clamd: ${(err as Error).message}`, { cause: err }));
          }
        })();
      });
    });
  }

  /** The engine and signature database version, e.g. `ClamAV 1.4.6/27480/Mon Nov 24 09:12:00 2026`. */
  async version(): Promise<string> {
    const v = await this.request('VERSION');
    if (!/^ClamAV /.test(v)) throw new Error(`clamd answered VERSION with "${v.slice(0, 200)}"`);
    return v;
  }

  async scan(file: string): Promise<Verdict> {
    const a = await this.request('INSTREAM', file);
    if (/^stream: OK$/.test(a)) return { clean: true };
    if (limitAnswer(a)) throw new ScanLimitError(fs.statSync(file).size, a);
    const found = /^stream: (.+) FOUND$/.exec(a);
    if (found) return { clean: false, signature: found[1] };
    throw new Error(`clamd gave no verdict: ${a.slice(0, 200)}`);
  }
}

/** A verdict with the engine and signature database that gave it (recorded with it). */
export interface ScanVerdict {
  state: 'Clean' | 'Quarantined';
  signature?: string;
  engine: string;
}

/** Why nothing can pass the scan stage: no `--scanner` given. */
export const NO_SCANNER =
  'the hub runs without a malware scanner: start it with --scanner clamd:unix:PATH (or clamd:tcp:HOST:PORT), or --scanner none to accept unscanned bytes';

/**
 * One file through the scan stage, now: the verdict of `spec`'s scanner, `Clean` with engine
 * `none` for `--scanner none` (the explicit opt-out). Fail-closed: without a scanner, or with one
 * that cannot be reached or gives no verdict, it throws (the caller passes nothing on).
 */
export async function scanFile(spec: ScannerSpec | undefined, file: string): Promise<ScanVerdict> {
  if (!spec) throw new Error(NO_SCANNER);
  if (spec.kind === 'none') return { state: 'Clean', engine: 'none (--scanner none: not scanned)' };
  const client = new ClamdClient(spec.target);
  const engine = await client.version();
  const v = await client.scan(file);
  return v.clean ? { state: 'Clean', engine } : { state: 'Quarantined', signature: v.signature, engine };
}
