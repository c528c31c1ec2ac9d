/**
 * Agent upgrades of the project (docs/operations.md, "Upgrading edges from the hub: AgentUpgrade"):
 * the list with the rollout at a glance, and one upgrade's detail with each selected edge's state
 * (Downloading 40%, Running 0.2.0, RolledBack: why). Read-only: upgrades are applied with
 * `outpost agent push` and `outpost apply`.
 */
import { enc } from '../api.js';
import { Badge } from '../components/badge.js';
import { ErrorBox } from '../components/error-box.js';
import { Table } from '../components/table.js';
import { Link } from '../components/link.js';
import { ago, bytes } from '../format.js';
import { useGet } from '../hooks.js';
import { useApp } from '../store.js';
import { upgradeStateDetail, type AgentUpgradeStatusView } from '../../../core/api/views.js';
import type { List } from '../types.js';

export interface AgentUpgradeView {
  metadata: { name: string; creationTimestamp?: string };
  spec: {
    release: { version: string; digest: string; size: number };
    rollout?: { maxUnavailable?: number | string; failureThreshold?: number; deadline?: string };
  };
  /** Absent until the hub's upgrade controller has computed it. */
  status?: Partial<AgentUpgradeStatusView>;
}

export function AgentUpgrades() {
  const session = useApp().session!;
  const list = useGet<List<AgentUpgradeView>>(`/api/v1/projects/${enc(session.project)}/agentupgrades`);
  const items = list.data?.items ?? [];
  return (
    <>
      <div class="title-row">
        <h1>Agent upgrades</h1>
      </div>
      <p class="muted">
        Edge agents switching to a signed release, a few at a time, each rolling back by itself if the new agent does
        not come up. Start one with <code>outpost agent push dist/outpost &gt; up.yaml</code> and{' '}
        <code>outpost apply -f up.yaml</code>.
      </p>
      <ErrorBox error={list.error} />
      <Table
        columns={['Name', 'Version', 'Edges', 'Running', 'Rolled back', 'Phase', 'Age']}
        count={items.length}
        loading={list.loading}
        empty="No agent upgrades in this project."
      >
        {items.map((u) => (
          <tr key={u.metadata.name}>
            <th scope="row">
              <Link href={`/agentupgrades/${encodeURIComponent(u.metadata.name)}`}>{u.metadata.name}</Link>
            </th>
            <td>{u.spec.release.version}</td>
            <td>{u.status?.counts?.total ?? 0}</td>
            <td>{u.status?.running ?? 0}</td>
            <td>{u.status?.rolledBack ?? 0}</td>
            <td>
              <Badge value={u.status?.phase ?? '-'} title={u.status?.reason} />
            </td>
            <td>{u.metadata.creationTimestamp ? ago(u.metadata.creationTimestamp) : '-'}</td>
          </tr>
        ))}
      </Table>
    </>
  );
}

export function AgentUpgradeDetail(props: { name: string }) {
  const session = useApp().session!;
  const one = useGet<AgentUpgradeView>(`/api/v1/projects/${enc(session.project)}/agentupgrades/${enc(props.name)}`);
  const u = one.data;
  const version = u?.spec.release.version ?? '?';
  const edges = u?.status?.edges ?? [];
  return (
    <>
      <div class="title-row">
        <h1>Agent upgrade {props.name}</h1>
        {u && <Badge value={u.status?.phase ?? '-'} />}
      </div>
      <ErrorBox error={one.error} />
      {u && (
        <>
          <p>
            Release <strong>{version}</strong>{' '}
            <code title={u.spec.release.digest}>{u.spec.release.digest.slice(0, 19)}…</code> (
            {bytes(u.spec.release.size)}); at most {String(u.spec.rollout?.maxUnavailable ?? 1)} at a time, pauses after{' '}
            {u.spec.rollout?.failureThreshold ?? 1} failed, {u.spec.rollout?.deadline ?? '2m'} for the new agent to come
            up.
          </p>
          <p class="muted">{u.status?.reason}</p>
          <Table columns={['Edge', 'State', 'Agent now', 'Connection']} count={edges.length} empty="No edge selected.">
            {edges.map((e) => (
              <tr key={e.edge}>
                <th scope="row">
                  <Link href={`/edges/${encodeURIComponent(e.edge)}`}>{e.edge}</Link>
                </th>
                <td>
                  <Badge value={e.state} /> {upgradeStateDetail(e, version)}
                </td>
                <td>{e.agentVersion ?? '-'}</td>
                <td>{e.online ? 'Online' : 'Offline'}</td>
              </tr>
            ))}
          </Table>
        </>
      )}
    </>
  );
}
