/**
 * @module The edge's replica, DATA/edge.db (sync/store.ts): opened after a quick integrity check,
 * or, when damaged, moved aside and started again empty (`openReplica` says why).
 */
import fs from 'node:fs';
import { createLogger } from '../core/logger.js';
import { isCorruptDatabase, quickCheck } from '../sync/sqlite.js';
import { ReplicaStore, type ReplicaStoreOptions } from '../sync/store.js';

const log = createLogger('edge');

/**
 * Opens the edge's replica; a damaged one is moved aside (kept for a post-mortem) and the agent
 * starts from an empty one: the spec comes back from the hub at the next sync, and the report is
 * written again from what the driver observes, while the workloads go on running. Staying down
 * instead left them unsupervised. Local intents made on site live in the replica and are lost.
 */
export async function openReplica(file: string, options: ReplicaStoreOptions): Promise<ReplicaStore> {
  try {
    const store = await ReplicaStore.open(file, options);
    try {
      quickCheck(store.db);
    } catch (err) {
      store.close();
      throw err;
    }
    return store;
  } catch (err) {
    if (!isCorruptDatabase(err)) throw err;
    const aside = `${file}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    for (const suffix of ['', '-wal', '-shm'])
      if (fs.existsSync(file + suffix)) fs.renameSync(file + suffix, aside + suffix);
    log.warn(
      { err, movedTo: aside },
      `the edge replica ${file} is damaged: moved it to ${aside} and rebuilding from the hub (spec) and the driver (status); local intents made on site are lost`,
    );
    return ReplicaStore.open(file, options);
  }
}
