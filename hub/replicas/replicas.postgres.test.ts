/**
 * The replicas' sessions on a real PostgreSQL (test/fixtures/postgres.ts): one of three leads; when
 * its session ends (the process died), another takes over the planning and tells the third, whose
 * specs the one before may have left unwritten (it can die between recording a pass and naming its
 * edges on the bus). The hooks below are test doubles that record what each replica was told.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TestPostgres } from '../../test/fixtures/postgres.js';
import { waitFor } from '../../test/helpers.js';
import { SyncPostgres } from '../state/pg/sync-client.js';
import type { BusMessage } from './bus.js';
import { Replicas } from './index.js';

const server = new TestPostgres();
let url: string;

interface Heard {
  replica: Replicas;
  pg: SyncPostgres;
  messages: BusMessage['t'][];
  leaderEvents: boolean[];
}
const all: Heard[] = [];

/** A replica whose hooks (a recording test double) note what it hears. */
function replica(id: string): Heard {
  const pg = new SyncPostgres(url, { connectTimeoutMs: 2_000, statementTimeoutMs: 5_000 });
  const messages: BusMessage['t'][] = [];
  const leaderEvents: boolean[] = [];
  const r = new Replicas(pg, id, {
    holds: () => true,
    served: () => [],
    onMessage: (m) => messages.push(m.t),
    onLeader: (leading) => leaderEvents.push(leading),
    onResync: () => {},
  });
  const h: Heard = { replica: r, pg, messages, leaderEvents };
  h.replica.start();
  all.push(h);
  return h;
}

beforeAll(async () => {
  await server.start();
  url = server.createDatabase('bus');
}, 60_000);

afterAll(async () => {
  for (const h of all) {
    h.replica.close();
    await h.pg.close().catch(() => undefined);
  }
  await server.remove();
});

it('a replica that takes over the planning tells the others, which look for specs left unwritten', async () => {
  const a = replica('a');
  await waitFor(() => a.replica.leading, { timeout: 20_000, what: 'replica a leads' });
  const b = replica('b');
  const c = replica('c');
  // b and c are in session (they hear a's messages: sent until both LISTEN) and do not lead.
  await waitFor(
    () => {
      a.replica.send({ t: 'specs', edges: ['e1'] });
      return b.messages.includes('specs') && c.messages.includes('specs');
    },
    { timeout: 20_000, what: 'b and c hear a' },
  );
  expect(b.replica.leading || c.replica.leading).toBe(false);
  expect(b.messages).not.toContain('leader');

  // a's session ends as a killed process's would: the lock is free, the next to ask takes it.
  a.replica.close();
  await a.pg.close();
  const next = await waitFor(() => [b, c].find((h) => h.replica.leading), {
    timeout: 20_000,
    what: 'b or c takes over the planning',
  });
  const other = next === b ? c : b;
  await waitFor(() => other.messages.includes('leader'), {
    timeout: 20_000,
    what: 'the replica that does not lead hears that another took over',
  });
  expect(next.leaderEvents).toEqual([true]);
  expect(other.leaderEvents).toEqual([]);
  // The new leader does not hear its own message (its hook plans everything again itself).
  expect(next.messages).not.toContain('leader');
}, 90_000);
