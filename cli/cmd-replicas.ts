/**
 * @module `outpost get replicas` (issue #42; docs/cli.md): the hub processes serving this hub,
 * from `GET /api/v1/replicas`: each one's URL, whether it is alive, its last heartbeat, the edges
 * it serves and which one plans; `*` marks the one that answered. A SQLite hub is one replica.
 */
import type { ReplicaView } from '../core/api/views.js';
import type { Session } from './context.js';
import { UsageError } from './errors.js';
import { withoutHeaders } from './get-output.js';
import { formatTable, line, toJson, toYaml } from './output.js';
import { age } from './views.js';

export const REPLICA_KINDS = new Set(['replica', 'replicas', 'rep']);

/** The table of replicas (`wide`: with when each started). */
export function formatReplicas(items: Partial<ReplicaView>[], now: number, wide = false): string {
  return formatTable(
    ['CURRENT', 'REPLICA', 'URL', 'ALIVE', 'LEADER', 'EDGES', 'LAST HEARTBEAT', ...(wide ? ['STARTED'] : [])],
    items.map((r) => [
      r.self ? '*' : '',
      r.id ?? '-',
      r.url ?? '-',
      r.alive ? 'yes' : 'no',
      r.leader ? 'yes' : '',
      String(r.edges ?? 0),
      r.lastHeartbeat ? `${age(r.lastHeartbeat, now)} ago` : '-',
      ...(wide ? [r.startedAt ?? '-'] : []),
    ]),
  );
}

/** `outpost get replicas [ID|URL]`: all of them, or the one with that id or URL. */
export async function getReplicas(s: Session, name: string | undefined, output: string, headers = true): Promise<void> {
  if (!['table', 'wide', 'json', 'yaml'].includes(output))
    throw new UsageError('replicas print as table, wide, yaml or json');
  const r = await s.client.get<{ items?: Partial<ReplicaView>[] }>('/api/v1/replicas');
  let items = r?.items ?? [];
  if (name !== undefined) {
    items = items.filter((x) => x.id === name || x.url === name.replace(/\/+$/, ''));
    if (!items.length)
      throw new UsageError(`no hub replica ${name}: list them with \`outpost get replicas\` (by REPLICA or URL)`);
  }
  if (output === 'json') return void s.out.out.write(toJson(name === undefined ? { items } : items[0]));
  if (output === 'yaml') return void s.out.out.write(toYaml(name === undefined ? { items } : items[0]));
  if (!items.length) return line(s.out.err, 'No hub replicas found.');
  s.out.out.write(withoutHeaders(formatReplicas(items, s.deps.now(), output === 'wide'), !headers));
}
