/**
 * @module One scan of one export directory: its settled files that are new or changed since the
 * ledger last saw them are copied into the blob store's outbox and queued in the ledger, oldest
 * first, within the target's `maxBytes` bound (refuse-new: a file that would pass it stays in the
 * directory, untouched, until the queue has drained). Ledger rows of files the hub holds and the
 * directory no longer has are dropped.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BlobDigest } from '../../core/blobs.js';
import type { EgressRule } from '../../core/data.js';
import { BlobBudgetError, type EdgeBlobStore } from '../blobs/store.js';
import type { EdgeTransfers } from '../blobs/transfers.js';
import { EXPORT_MEDIA_TYPE, type EgressLedger } from './egress-ledger.js';

/**
 * A file is taken once it has not been modified for this long: a workload writing a large file
 * is not caught half-way. (Writing to a dot-file and renaming it is instant and always safe:
 * names starting with `.` are never taken.)
 */
export const EGRESS_SETTLE_MS = 1_000;

export interface EgressScanDeps {
  ledger: EgressLedger;
  blobs: EdgeBlobStore;
  transfers: EdgeTransfers;
  /** The host directory of one export target. */
  exportDir(workload: string, target: string): string;
  settleMs?: number;
}

/** Queues new and changed files of one export; returns why some could not be queued. */
export async function scanExport(d: EgressScanDeps, workload: string, rule: EgressRule): Promise<string | undefined> {
  const dir = d.exportDir(workload, rule.target);
  const files = listFiles(dir);
  const settle = d.settleMs ?? EGRESS_SETTLE_MS;
  const now = Date.now();
  const known = new Map(d.ledger.ofTarget(workload, rule.target).map((r) => [r.path, r]));
  const seen = new Set<string>();
  let refused: { files: number; bytes: number; first?: string } | undefined;
  let budget: string | undefined;
  // Oldest first: the order the workload wrote them in is the order they leave.
  files.sort((a, b) => a.mtimeMs - b.mtimeMs || a.rel.localeCompare(b.rel));
  for (const f of files) {
    const p = `${rule.target}/${f.rel}`;
    seen.add(p);
    const row = known.get(p);
    const mtime = Math.floor(f.mtimeMs);
    if (row && row.size === f.size && row.mtime_ms === mtime) continue;
    if (now - f.mtimeMs < settle) continue;
    const queued = d.ledger.queuedBytes(workload, rule.target);
    if (queued + f.size > rule.maxBytes) {
      refused ??= { files: 0, bytes: queued };
      refused.files++;
      refused.first ??= p;
      continue;
    }
    let r: { digest: BlobDigest; size: number };
    try {
      r = await d.blobs.queueUpload(f.abs, EXPORT_MEDIA_TYPE);
    } catch (err) {
      if (err instanceof BlobBudgetError) {
        budget = err.message;
        break;
      }
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // removed meanwhile
      throw err;
    }
    const old = row?.state === 'queued' ? row.digest : undefined;
    d.ledger.queue({
      workload,
      target: rule.target,
      path: p,
      size: r.size,
      mtime_ms: mtime,
      digest: r.digest,
      mode: rule.mode,
    });
    // A newer version replaced one still queued: the old bytes need not leave.
    if (old && old !== r.digest) await d.ledger.release(old);
    d.transfers.kick();
  }
  // Files gone from the directory (moved, or deleted by the workload) need no ledger row once on the hub.
  d.ledger.forget(
    workload,
    [...known].filter(([p, row]) => !seen.has(p) && row.state === 'done').map(([p]) => p),
  );
  if (budget) return `export "${rule.target}": ${budget}`;
  if (refused)
    return `export "${rule.target}": the upload queue holds ${refused.bytes} bytes of its ${rule.maxBytes}-byte bound (maxBytes); ${refused.files} newer file(s) wait in the export directory (first ${refused.first}) until the hub takes the queue: reconnect the edge or raise maxBytes`;
  return undefined;
}

/** Regular files under `dir` (recursively), skipping names that start with `.` and symbolic links. */
function listFiles(dir: string): { rel: string; abs: string; size: number; mtimeMs: number }[] {
  const out: { rel: string; abs: string; size: number; mtimeMs: number }[] = [];
  const walk = (d: string, rel: string) => {
    let ents: fs.Dirent[];
    try {
      ents = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of ents) {
      if (e.name.startsWith('.')) continue;
      const abs = path.join(d, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(abs, r);
      else if (e.isFile()) {
        try {
          const st = fs.statSync(abs);
          out.push({ rel: r, abs, size: st.size, mtimeMs: st.mtimeMs });
        } catch {
          // removed meanwhile
        }
      }
    }
  };
  walk(dir, '');
  return out;
}
