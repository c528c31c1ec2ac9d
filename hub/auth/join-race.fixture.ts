/**
 * A separate process that tries to consume one join token several times, for the concurrency test
 * in join-tokens.test.ts. Args: DB_FILE TOKEN ATTEMPTS GO_FILE. It prints `ready`, spins until
 * GO_FILE exists so that every process starts within microseconds of the others, then prints
 * `{"ok":N,"errors":[...]}` on stdout.
 */
import fs from 'node:fs';
import { openDatabase } from '../../sync/sqlite.js';
import { consumeJoinToken } from './join-tokens.js';

const [file, token, attempts, go] = process.argv.slice(2);
const db = openDatabase(file);
process.stdout.write('ready\n');
const deadline = Date.now() + 30_000;
// A busy wait, not a timer: a 5 ms timer would let one process finish before another wakes.
while (!fs.existsSync(go)) {
  if (Date.now() > deadline) throw new Error(`${go} never appeared`);
}
let ok = 0;
const errors: string[] = [];
for (let i = 0; i < Number(attempts); i++) {
  try {
    consumeJoinToken(db, token);
    ok++;
  } catch (err) {
    errors.push((err as Error).message);
  }
}
db.close();
process.stdout.write(JSON.stringify({ ok, errors }));
