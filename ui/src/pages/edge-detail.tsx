/**
 * One edge: facts and inventory, its workloads with status and generation, the agent releases it
 * switched to, the DataObjects it holds and the images it staged, local overrides made on site,
 * connection history, and its events with those of the AgentUpgrades about it.
 */
import { enc } from '../api.js';
import { EdgeClusterFact } from './clusters.js';
import { Badge } from '../components/badge.js';
import { ConfirmButton } from '../components/confirm.js';
import { ErrorBox } from '../components/error-box.js';
import { LabelChips } from '../components/labels.js';
import { Link } from '../components/link.js';
import { ago, bytes, dateTime, duration, inlineValue } from '../format.js';
import { useAction, useGet } from '../hooks.js';
import { api, can, useApp } from '../store.js';
import type { Connection, EdgeObj, List, LocalStateView } from '../types.js';
import { ExportedFiles, HeldDataObjects } from './edge-data.js';
import { AgentReleases, StagedImages } from './edge-software.js';
import { WorkloadTools } from './edge-tools.js';
import { Events } from './overview.js';

function Overrides(props: {
  edge: string;
  project: string;
  intents: Record<string, LocalStateView>;
  canWrite: boolean;
}) {
  const clear = useAction();
  const entries = Object.entries(props.intents);
  return (
    <section aria-labelledby="overrides-h">
      <h2 id="overrides-h">Local overrides made on site</h2>
      <ErrorBox error={clear.error} />
      {entries.length === 0 && <p class="muted">None: every workload runs as the hub specifies.</p>}
      {entries.map(([w, st]) => (
        <div key={w} class="card override">
          <div class="card-head">
            <h3>
              <Link href={`/workloads/${enc(w)}`}>{w}</Link>
              {st.paused && <Badge value="Paused" title="paused on site: the edge does not apply hub changes to it" />}
            </h3>
            {props.canWrite && (
              <ConfirmButton
                label="Clear local overrides"
                confirm={`Clear the on-site overrides of ${w}? The edge returns to the hub's spec.`}
                confirmLabel="Clear"
                danger
                busy={clear.busy}
                onConfirm={() =>
                  clear.run(() =>
                    api.post(`/api/v1/projects/${enc(props.project)}/edges/${enc(props.edge)}/clear-intents`, {
                      workload: w,
                    }),
                  )
                }
              />
            )}
          </div>
          {Object.keys(st.overrides).length > 0 && (
            <table class="table compact">
              <caption>Fields overridden on site</caption>
              <thead>
                <tr>
                  <th scope="col">Field</th>
                  <th scope="col">Value on site</th>
                </tr>
              </thead>
              <tbody>
                {Object.entries(st.overrides).map(([path, v]) => (
                  <tr key={path}>
                    <th scope="row">
                      <code>{path}</code>
                    </th>
                    <td>
                      <code>{inlineValue(v)}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <table class="table compact">
            <caption>Intents in force, oldest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Action</th>
                <th scope="col">Origin</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {st.intents.map((i) => (
                <tr key={i.seq}>
                  <td>
                    <time dateTime={new Date(i.at).toISOString()} title={dateTime(i.at)}>
                      {dateTime(i.at)} ({ago(i.at)})
                    </time>
                  </td>
                  <td>{i.action}</td>
                  <td>{i.origin}</td>
                  <td>
                    {i.set
                      ? Object.entries(i.set).map(([k, v]) => <code key={k}>{`${k}=${inlineValue(v)} `}</code>)
                      : '—'}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </section>
  );
}

export function EdgeDetail(props: { name: string }) {
  const session = useApp().session!;
  const p = enc(session.project);
  const n = enc(props.name);
  const edge = useGet<EdgeObj>(`/api/v1/projects/${p}/edges/${n}`);
  const conns = useGet<List<Connection>>(`/api/v1/projects/${p}/edges/${n}/connections?limit=20`);
  const act = useAction();
  const e = edge.data;
  const inv = e?.status.inventory;
  return (
    <>
      <p class="crumbs">
        <Link href="/edges">Edges</Link> /
      </p>
      <div class="title-row">
        <h1>
          Edge {props.name} {e && <Badge value={e.status.phase} />}{' '}
          {e?.spec.unschedulable && <span class="tag">drained</span>}
        </h1>
        {e && (
          <div class="actions">
            {can(session, 'admin') && e.status.phase === 'Pending' && (
              <ConfirmButton
                label="Approve"
                confirm="Approve this edge? It will get workloads."
                busy={act.busy}
                onConfirm={() => act.run(() => api.post(`/api/v1/projects/${p}/edges/${n}/approve`))}
              />
            )}
            {can(session, 'write') &&
              (e.spec.unschedulable ? (
                <button
                  type="button"
                  class="btn"
                  disabled={act.busy}
                  onClick={() => act.run(() => api.post(`/api/v1/projects/${p}/edges/${n}/uncordon`))}
                >
                  Uncordon
                </button>
              ) : (
                <ConfirmButton
                  label="Drain"
                  danger
                  confirm="Drain this edge? Its workloads are removed until you uncordon it."
                  busy={act.busy}
                  onConfirm={() => act.run(() => api.post(`/api/v1/projects/${p}/edges/${n}/drain`))}
                />
              ))}
          </div>
        )}
      </div>
      <ErrorBox error={edge.error} />
      <ErrorBox error={act.error} />
      {e && (
        <>
          <div class="grid2">
            <section aria-labelledby="facts-h">
              <h2 id="facts-h">Connection</h2>
              <dl class="facts">
                <dt>State</dt>
                <dd>{e.status.phase === 'Pending' ? 'Waiting for approval' : e.status.phase}</dd>
                <dt>Last seen</dt>
                <dd>{e.status.lastSeen ? `${ago(e.status.lastSeen)} (${dateTime(e.status.lastSeen)})` : 'never'}</dd>
                <dt>Connected since</dt>
                <dd>{e.status.connectedSince ? dateTime(e.status.connectedSince) : '—'}</dd>
                <dt>Served by</dt>
                <dd>
                  {e.status.servedBy ? (
                    <Link href="/replicas" title={`hub replica ${e.status.servedBy.replica}`}>
                      {e.status.servedBy.url ?? e.status.servedBy.replica}
                    </Link>
                  ) : (
                    '—'
                  )}
                </dd>
                <dt>Agent version</dt>
                <dd>{e.status.agentVersion ?? inv?.agentVersion ?? '—'}</dd>
                {e.status.cluster && <EdgeClusterFact host={e.status.cluster} />}
                <dt>Labels</dt>
                <dd>
                  <LabelChips labels={e.metadata.labels} />
                </dd>
              </dl>
            </section>
            <section aria-labelledby="inv-h">
              <h2 id="inv-h">Inventory</h2>
              {inv ? (
                <dl class="facts">
                  <dt>Hostname</dt>
                  <dd>{inv.hostname ?? '—'}</dd>
                  <dt>OS / arch</dt>
                  <dd>
                    {inv.os ?? '?'} / {inv.arch ?? '?'}
                  </dd>
                  <dt>CPUs</dt>
                  <dd>{inv.cpus ?? '—'}</dd>
                  <dt>Memory</dt>
                  <dd>{bytes(inv.memoryBytes)}</dd>
                  <dt>Driver</dt>
                  <dd>{inv.driver ?? '—'}</dd>
                  <dt>Runtimes</dt>
                  <dd>{inv.runtimes?.join(', ') || '—'}</dd>
                  <dt>CPU model</dt>
                  <dd>{inv.cpuModel ?? '—'}</dd>
                  <dt>Vendor / product</dt>
                  <dd>
                    {inv.vendor ?? '—'} / {inv.product ?? '—'}
                  </dd>
                  <dt>Serial</dt>
                  <dd>{inv.serial ?? '—'}</dd>
                  <dt>Disks</dt>
                  <dd>
                    {inv.disks?.length
                      ? inv.disks
                          .map(
                            (d) =>
                              `${d.name} ${bytes(d.sizeBytes)}${d.rotational === false ? ' ssd' : d.rotational ? ' hdd' : ''}${d.model ? ` (${d.model})` : ''}`,
                          )
                          .join(', ')
                      : '—'}
                  </dd>
                  <dt>Network</dt>
                  <dd>
                    {inv.nics?.length
                      ? inv.nics
                          .map(
                            (n) =>
                              `${n.name}${n.mac ? ` ${n.mac}` : ''}${n.speedMbps ? ` ${n.speedMbps} Mb/s` : ''}${n.virtual ? ' (virtual)' : ''}`,
                          )
                          .join(', ')
                      : '—'}
                  </dd>
                  <dt>Inventory labels</dt>
                  <dd>
                    <LabelChips labels={e.status.inventoryLabels ?? {}} />
                  </dd>
                </dl>
              ) : (
                <p class="muted">Not reported yet.</p>
              )}
            </section>
          </div>

          <section aria-labelledby="wl-h">
            <h2 id="wl-h">Workloads</h2>
            <div class="table-wrap">
              <table class="table">
                <thead>
                  <tr>
                    <th scope="col">Workload</th>
                    <th scope="col">Placement</th>
                    <th scope="col">State</th>
                    <th scope="col">Generation (applied / desired)</th>
                    <th scope="col">Restarts</th>
                    <th scope="col">Since</th>
                    <th scope="col">Objects</th>
                  </tr>
                </thead>
                <tbody>
                  {e.status.workloads.map((w) => (
                    <tr key={w.name}>
                      <th scope="row">
                        <Link href={`/workloads/${enc(w.name)}`}>{w.name}</Link>
                      </th>
                      <td>
                        <Link href={`/placements/${enc(w.placement)}`}>{w.placement}</Link>
                      </td>
                      <td>
                        <Badge value={w.state} />
                        {w.reason && <div class="reason">{w.reason}</div>}
                      </td>
                      <td>
                        {w.observedGeneration ?? '—'} / {w.generation}
                      </td>
                      <td>{w.restarts}</td>
                      <td>{w.since ? ago(w.since) : '—'}</td>
                      <td>
                        <ul class="objects">
                          {Object.entries(w.objects).map(([k, o]) => (
                            <li key={k}>
                              <span class={o.ready ? 'ok-text' : 'bad-text'}>{o.ready ? '✓' : '✗'}</span> {k}
                              {o.message && <span class="muted"> — {o.message}</span>}
                            </li>
                          ))}
                        </ul>
                      </td>
                    </tr>
                  ))}
                  {e.status.workloads.length === 0 && (
                    <tr>
                      <td colSpan={7} class="empty">
                        No workload is placed on this edge.
                      </td>
                    </tr>
                  )}
                </tbody>
              </table>
            </div>
          </section>

          <AgentReleases release={inv?.agentRelease} version={e.status.agentVersion ?? inv?.agentVersion} />
          <HeldDataObjects objects={e.status.dataObjects} />
          <StagedImages staging={e.status.imageStaging} />

          {can(session, 'write') && e.status.phase === 'Online' && (
            <WorkloadTools project={session.project} edge={props.name} workloads={e.status.workloads} />
          )}

          <ExportedFiles project={session.project} edge={props.name} />

          <Overrides
            edge={props.name}
            project={session.project}
            intents={e.status.localIntents}
            canWrite={can(session, 'write')}
          />

          <section aria-labelledby="conn-h">
            <h2 id="conn-h">Connection history</h2>
            <ErrorBox error={conns.error} />
            <div class="table-wrap">
              <table class="table compact">
                <thead>
                  <tr>
                    <th scope="col">Connected</th>
                    <th scope="col">Disconnected</th>
                    <th scope="col">Duration</th>
                    <th scope="col">From</th>
                    <th scope="col">Hub replica</th>
                    <th scope="col">Why it ended</th>
                  </tr>
                </thead>
                <tbody>
                  {conns.data?.items.map((c, i) => (
                    <tr key={i}>
                      <td>{dateTime(c.connectedAt)}</td>
                      <td>
                        {c.disconnectedAt ? (
                          dateTime(c.disconnectedAt)
                        ) : (
                          <Badge value={i === 0 && e.status.phase === 'Online' ? 'Online' : 'Stale'} />
                        )}
                      </td>
                      <td>
                        {c.durationMs !== undefined
                          ? duration(c.durationMs)
                          : i === 0 && e.status.connectedSince
                            ? duration(Date.now() - Date.parse(c.connectedAt))
                            : '—'}
                      </td>
                      <td>{c.remoteAddress ?? '—'}</td>
                      <td title={c.servedBy ? `hub replica ${c.servedBy.replica}` : undefined}>
                        {c.servedBy ? (c.servedBy.url ?? c.servedBy.replica) : '—'}
                      </td>
                      <td>{c.reason ?? '—'}</td>
                    </tr>
                  ))}
                  {conns.data && conns.data.items.length === 0 && (
                    <tr>
                      <td colSpan={6} class="empty">
                        Never connected.
                      </td>
                    </tr>
                  )}
                </tbody>
              </table>
            </div>
          </section>
          <Events
            project={session.project}
            kind="Edge"
            name={props.name}
            title="Events of this edge and its agent upgrades"
          />
        </>
      )}
    </>
  );
}
