/**
 * Clusters at the sites of the project (docs/clusters.md): the list (phase, template and
 * Kubernetes version, nodes Ready, the endpoint through the hub) and one cluster's detail: the
 * operation under way and where it is (which node, what step), each node (edge, role, kubelet
 * version, Ready, reason), the control plane's components and the cluster's events. Read-only:
 * clusters are applied like the other objects (`outpost apply -f`).
 */
import { enc } from '../api.js';
import { Badge } from '../components/badge.js';
import { ErrorBox } from '../components/error-box.js';
import { Table } from '../components/table.js';
import { Link } from '../components/link.js';
import { ago } from '../format.js';
import { useGet } from '../hooks.js';
import { useApp } from '../store.js';
import type { ClusterNodeView, ClusterStatusView } from '../../../core/api/views.js';
import type { ClusterSpec } from '../../../core/resources.js';
import type { List } from '../types.js';
import { Events } from './overview.js';

interface ClusterView {
  metadata: { name: string; creationTimestamp?: string };
  spec: ClusterSpec;
  /** Absent when the hub runs without its cluster module. */
  status?: ClusterStatusView;
}

/** The control plane's components, in start order, with what their health is checked by. */
const COMPONENTS: [string, string][] = [
  ['etcd', 'etcd /health'],
  ['kube-apiserver', 'kube-apiserver /readyz'],
  ['kube-controller-manager', 'kube-controller-manager /healthz'],
  ['kube-scheduler', 'kube-scheduler /healthz'],
];

const yes = (b: boolean | undefined) => (b ? 'yes' : 'no');

/**
 * The cluster's Kubernetes API through the hub's tunnel to its control-plane edge: what
 * `outpost cluster kubeconfig NAME` puts in the kubeconfig (docs/clusters.md, "Using the cluster").
 */
export function clusterEndpoint(origin: string, c: Pick<ClusterView, 'spec' | 'status'>): string | undefined {
  // The hub's status names it once a control-plane host is reserved; before that, the spec's.
  if (c.status?.endpoint) return `${origin}${c.status.endpoint}`;
  const cp = c.spec.controlPlane.edges[0];
  return cp ? `${origin}/api/v1/edges/${enc(cp)}/kube` : undefined;
}

/** `Ready 2/3` of the summary `2/3 nodes Ready`. */
function readyOf(s: ClusterStatusView | undefined): string {
  const m = s && /^(\d+)\/(\d+)/.exec(s.summary);
  return m ? `${m[1]}/${m[2]}` : '-';
}

/** A node that is not where the cluster wants it: the step under way (or what holds it). */
function underWay(n: ClusterNodeView, template: string): boolean {
  return n.role === 'removing' || n.phase !== 'Ready' || !n.ready || (n.runs !== undefined && n.runs !== template);
}

/** The cluster an edge is a host of, as a fact of the edge's page (an edge belongs to at most one). */
export function EdgeClusterFact(props: { host: { cluster: string; role: string } }) {
  return (
    <>
      <dt>Cluster</dt>
      <dd>
        <Link href={`/clusters/${enc(props.host.cluster)}`}>{props.host.cluster}</Link> ({props.host.role})
      </dd>
    </>
  );
}

export function Clusters() {
  const session = useApp().session!;
  const list = useGet<List<ClusterView>>(`/api/v1/projects/${enc(session.project)}/clusters`);
  const items = list.data?.items ?? [];
  return (
    <>
      <div class="title-row">
        <h1>Clusters</h1>
      </div>
      <p class="muted">
        Kubernetes clusters the hub builds on edge hosts from a ClusterTemplate: created, scaled, upgraded node by node
        and deleted by the edges' agents. Apply them with <code>outpost apply -f</code>; reach one with{' '}
        <code>outpost cluster kubeconfig NAME</code>.
      </p>
      <ErrorBox error={list.error} />
      <Table
        columns={['Name', 'Phase', 'Template', 'Kubernetes', 'Nodes Ready', 'Control plane', 'Endpoint', 'Age']}
        label="Clusters"
        count={items.length}
        loading={list.loading}
        empty="No clusters in this project."
      >
        {items.map((c) => (
          <tr key={c.metadata.name}>
            <th scope="row">
              <Link href={`/clusters/${enc(c.metadata.name)}`}>{c.metadata.name}</Link>
            </th>
            <td>
              <Badge value={c.status?.phase ?? '-'} title={c.status?.message} />
            </td>
            <td>{c.status?.template ?? `${c.spec.template.name}@${c.spec.template.version}`}</td>
            <td>{c.status?.kubernetesVersion ?? '-'}</td>
            <td>{readyOf(c.status)}</td>
            <td>
              <Link href={`/edges/${enc(c.spec.controlPlane.edges[0] ?? '')}`}>{c.spec.controlPlane.edges[0]}</Link>
            </td>
            <td>
              <code>{clusterEndpoint(location.origin, c) ?? '-'}</code>
            </td>
            <td>{c.metadata.creationTimestamp ? ago(c.metadata.creationTimestamp) : '-'}</td>
          </tr>
        ))}
      </Table>
    </>
  );
}

/** The operation under way: the phase, why, and each node still on its way with its step. */
function Progress(props: { status: ClusterStatusView }) {
  const s = props.status;
  const busy = s.nodes.filter((n) => underWay(n, s.template));
  const onVersion = s.nodes.filter((n) => n.role !== 'removing' && n.runs === s.template).length;
  const counted = s.nodes.filter((n) => n.role !== 'removing').length;
  return (
    <section aria-labelledby="progress-h">
      <h2 id="progress-h">Progress</h2>
      <p>
        <Badge value={s.phase} /> <span class="reason">{s.summary}</span>
        {s.phase === 'Upgrading' && (
          <span class="reason">
            {' '}
            · {onVersion}/{counted} nodes run {s.template}
          </span>
        )}
      </p>
      {s.message && <p class="reason">{s.message}</p>}
      {busy.length === 0 ? (
        <p class="muted">Nothing under way: every node is Ready on {s.template}.</p>
      ) : (
        <ul class="progress-nodes" aria-label="Nodes under way">
          {busy.map((n) => (
            <li key={n.edge}>
              <strong>{n.edge}</strong> ({n.role}): <Badge value={n.phase} />
              {n.step && <> step {n.step}</>}
              {n.runs && n.runs !== s.template && <> · runs {n.runs}</>}
              {n.phase === 'Ready' && n.ready && n.role !== 'removing' && n.runs !== s.template && (
                <span class="reason"> · not on {s.template} yet</span>
              )}
              {n.message && <span class="reason"> · {n.message}</span>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

export function ClusterDetail(props: { name: string }) {
  const session = useApp().session!;
  const one = useGet<ClusterView>(`/api/v1/projects/${enc(session.project)}/clusters/${enc(props.name)}`);
  const c = one.data;
  const s = c?.status;
  const endpoint = c && clusterEndpoint(location.origin, c);
  return (
    <>
      <div class="title-row">
        <h1>Cluster {props.name}</h1>
        {s && <Badge value={s.phase} title={s.message} />}
      </div>
      <ErrorBox error={one.error} />
      {c && (
        <>
          <div class="grid2">
            <section aria-labelledby="cl-h">
              <h2 id="cl-h">Cluster</h2>
              <dl class="facts">
                <dt>Template</dt>
                <dd>{s?.template ?? `${c.spec.template.name}@${c.spec.template.version}`}</dd>
                <dt>Kubernetes</dt>
                <dd>{s?.kubernetesVersion ?? '-'}</dd>
                <dt>Nodes</dt>
                <dd>{s?.summary ?? '-'}</dd>
                <dt>Endpoint</dt>
                <dd>
                  <code>{endpoint ?? '-'}</code>
                  <br />
                  <span class="muted">
                    through the hub: <code>outpost cluster kubeconfig {props.name}</code>
                  </span>
                </dd>
                <dt>Upgrade settings</dt>
                <dd>
                  maxUnavailable {c.spec.upgrade?.maxUnavailable ?? 1}, failureThreshold{' '}
                  {c.spec.upgrade?.failureThreshold ?? 1}
                </dd>
              </dl>
            </section>
            {s ? <Progress status={s} /> : <p class="muted">This hub reports no cluster status.</p>}
          </div>
          {s && (
            <>
              <h2>Nodes</h2>
              <Table
                columns={['Edge', 'Role', 'Phase', 'Runs', 'Kubelet', 'Ready', 'Reason', 'Edge online']}
                label="Nodes"
                count={s.nodes.length}
                empty={<>No node yet{s.message ? `: ${s.message}` : ''}.</>}
              >
                {s.nodes.map((n) => (
                  <tr key={n.edge}>
                    <th scope="row">
                      <Link href={`/edges/${enc(n.edge)}`}>{n.edge}</Link>
                    </th>
                    <td>{n.role}</td>
                    <td>
                      <Badge value={n.phase} />
                      {n.step && <span class="reason"> {n.step}</span>}
                    </td>
                    <td>{n.runs ?? '-'}</td>
                    <td>{n.kubeletVersion ?? '-'}</td>
                    <td>{yes(n.ready)}</td>
                    <td class="reason-cell">{n.reason ?? n.message ?? '-'}</td>
                    <td>{yes(n.online)}</td>
                  </tr>
                ))}
              </Table>
              <h2>Control plane health</h2>
              <Table columns={['Component', 'Health', 'Running', 'Restarts', 'Why not healthy']} label="Components">
                {COMPONENTS.map(([name, check]) => {
                  const h = s.components[name];
                  return (
                    <tr key={name}>
                      <th scope="row">{check}</th>
                      <td>
                        <Badge value={!h ? 'Pending' : h.healthy ? 'Healthy' : 'Unhealthy'} />
                      </td>
                      <td>{h ? yes(h.running) : '-'}</td>
                      <td>{h?.restarts ?? '-'}</td>
                      <td class="reason-cell">{h && !h.healthy ? (h.message ?? '-') : '-'}</td>
                    </tr>
                  );
                })}
              </Table>
            </>
          )}
          <Events
            project={session.project}
            kind="Cluster"
            name={props.name}
            title="Events of this cluster"
            limit={12}
          />
        </>
      )}
    </>
  );
}
