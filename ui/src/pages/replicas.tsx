/**
 * The hub's replicas (issue #42; docs/operations.md, "HA and scale-out"): the hub processes on its
 * database, each with its URL, whether it is alive, its last heartbeat, the edges it serves and
 * whether it plans; the one this page talks to is marked. A SQLite hub is one replica.
 */
import { Badge } from '../components/badge.js';
import { ErrorBox } from '../components/error-box.js';
import { Table } from '../components/table.js';
import { ago, dateTime } from '../format.js';
import { useGet } from '../hooks.js';
import type { List, Replica } from '../types.js';

export function Replicas() {
  const list = useGet<List<Replica>>('/api/v1/replicas');
  const items = list.data?.items ?? [];
  const alive = items.filter((r) => r.alive).length;
  return (
    <>
      <div class="title-row">
        <h1>Hub replicas</h1>
      </div>
      <p class="muted">
        The hub processes serving this hub: {alive} of {items.length} alive. Each edge is served by one of them; one
        plans the fleet (the leader). A replica that stopped or died is listed for a day after.
      </p>
      <ErrorBox error={list.error} />
      <Table
        columns={['Replica', 'URL', 'State', 'Role', 'Edges served', 'Last heartbeat', 'Started']}
        count={items.length}
        loading={list.loading}
        empty="No replicas listed."
      >
        {items.map((r) => (
          <tr key={r.id} aria-current={r.self ? 'true' : undefined}>
            <th scope="row">
              <code>{r.id}</code>
              {r.self && <div class="reason">this page talks to it</div>}
            </th>
            <td>{r.url}</td>
            <td>
              <Badge value={r.alive ? 'Alive' : 'Down'} />
            </td>
            <td>{r.leader ? 'Leader (plans the fleet)' : '—'}</td>
            <td>{r.edges}</td>
            <td title={dateTime(r.lastHeartbeat)}>{ago(r.lastHeartbeat)}</td>
            <td>{dateTime(r.startedAt)}</td>
          </tr>
        ))}
      </Table>
    </>
  );
}
