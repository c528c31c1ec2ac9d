/**
 * @module The hub's replica store: DATA/hub.db, the SQLite file of the edges' mailbox documents
 * (and of the hub's tables too, without `--database`), opened with the hub's document cache and
 * WAL checkpoint sizes. A damaged file ends the start with what the operator is to do.
 */
import path from 'node:path';
import { errorMessage } from '../core/errors.js';
import { isCorruptDatabase } from '../sync/sqlite.js';
import { ReplicaStore, type ReplicaStoreOptions } from '../sync/store.js';

/**
 * The hub's document cache: 384 MiB holds the 20,000 mailboxes of 10,000 edges with one or two
 * workloads each (~17 KiB a document, sync/doc-cache.ts). A fleet-wide change touches every mailbox
 * once; when they do not all fit, each is loaded again from SQLite (docs/benchmarks.md).
 */
export const HUB_DOC_CACHE_BYTES = 384 * 1024 * 1024;

/**
 * The hub's WAL is checkpointed every 10,000 pages (~40 MB) instead of SQLite's 1,000: the hub
 * commits thousands of small transactions a second in a fan-out, and each checkpoint copies the
 * WAL into the database file with two fsyncs; with a larger WAL the pages written again and again
 * (indexes, status rows) are copied once per checkpoint. Fan-out to 10,000: hub CPU 17.6 -> 14.2 s
 * (docs/benchmarks.md, "Fourth round"). Edges keep the default: their disks are small and their
 * write rate is not.
 */
export const HUB_WAL_AUTOCHECKPOINT_PAGES = 10_000;

/**
 * Opens DATA/hub.db. `hooks` are the store's change hooks (hub/change-hooks.ts); `memoryBudgetBytes`
 * defaults to HUB_DOC_CACHE_BYTES.
 */
export async function openHubStore(
  dataDir: string,
  o: Pick<ReplicaStoreOptions, 'memoryBudgetBytes' | 'onChange' | 'afterChange'>,
): Promise<ReplicaStore> {
  const dbFile = path.join(dataDir, 'hub.db');
  return ReplicaStore.open(dbFile, {
    memoryBudgetBytes: o.memoryBudgetBytes ?? HUB_DOC_CACHE_BYTES,
    walAutocheckpointPages: HUB_WAL_AUTOCHECKPOINT_PAGES,
    onChange: o.onChange,
    afterChange: o.afterChange,
  }).catch((err: unknown) => {
    if (!isCorruptDatabase(err)) throw err;
    throw new Error(
      `the hub database ${dbFile} is damaged (${errorMessage(err)}): stop the hub, move the file aside and restore the last backup in its place (outpost hub backup made it; docs/operations.md, "Backup and restore"), then start the hub again`,
      { cause: err },
    );
  });
}
