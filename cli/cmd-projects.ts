/**
 * @module `outpost get projects`, `describe project`, `delete project` (docs/projects.md): Projects
 * from `/api/v1/projects`, each with its use against its quotas (`3/10` where a quota is set).
 * Projects are made and changed with `outpost apply -f` (kind: Project).
 */
import type { Project } from '../core/resources.js';
import type { Session } from './context.js';
import { UsageError } from './errors.js';
import { withoutHeaders } from './get-output.js';
import { formatTable, line, toJson, toYaml } from './output.js';
import { age, formatBytes } from './views.js';

export const PROJECT_KINDS = new Set(['project', 'projects', 'proj']);

type Usage = {
  edges: number;
  placements: number;
  workloads: number;
  blobBytes: number;
  dataObjectBytes: number;
  tunnelSessions: number;
};
type Shown = Project & { status?: { phase?: string; usage?: Usage; remaining?: string } };

const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4,
};
const bytesOf = (v: number | string | undefined): number | undefined => {
  if (v === undefined || typeof v === 'number') return v;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(v);
  return m ? Math.floor(Number(m[1]) * (UNITS[m[2].toLowerCase()] ?? NaN)) : undefined;
};
const of = (used: number, limit: number | undefined, show: (n: number) => string = String) =>
  limit === undefined ? show(used) : `${show(used)}/${show(limit)}`;

/** Each quota's use, as `get` and `describe` show it. */
function usageCells(p: Shown): Record<string, string> {
  const u = p.status?.usage ?? {
    edges: 0,
    placements: 0,
    workloads: 0,
    blobBytes: 0,
    dataObjectBytes: 0,
    tunnelSessions: 0,
  };
  const q = p.spec.quotas;
  return {
    edges: of(u.edges, q.edges),
    placements: of(u.placements, q.placements),
    workloads: of(u.workloads, q.workloads),
    blobBytes: of(u.blobBytes, bytesOf(q.blobBytes), formatBytes),
    dataObjectBytes: of(u.dataObjectBytes, bytesOf(q.dataObjectBytes), formatBytes),
    tunnelSessions: of(u.tunnelSessions, q.tunnelSessions),
  };
}

export function formatProjects(items: Shown[], now: number): string {
  return formatTable(
    ['NAME', 'EDGES', 'PLACEMENTS', 'WORKLOADS', 'BLOBS', 'DATA', 'SESSIONS', 'PHASE', 'AGE'],
    items.map((p) => {
      const c = usageCells(p);
      const phase = p.status?.phase ?? 'Active';
      return [
        p.metadata.name,
        c.edges,
        c.placements,
        c.workloads,
        c.blobBytes,
        c.dataObjectBytes,
        c.tunnelSessions,
        p.status?.remaining ? `${phase} (${p.status.remaining})` : phase,
        age(p.metadata.creationTimestamp, now),
      ];
    }),
  );
}

/** `outpost get projects [NAME]`. */
export async function getProjects(s: Session, name: string | undefined, output: string, headers = true): Promise<void> {
  if (!['table', 'wide', 'json', 'yaml', 'name'].includes(output))
    throw new UsageError('projects print as table, wide, yaml, json or name');
  const items =
    name === undefined
      ? ((await s.client.get<{ items?: Shown[] }>('/api/v1/projects'))?.items ?? [])
      : [
          await s.client.get<Shown>(`/api/v1/projects/${encodeURIComponent(name)}`, {
            subject: { kind: 'project', name },
          }),
        ];
  if (output === 'json') return void s.out.out.write(toJson(name === undefined ? { items } : items[0]));
  if (output === 'yaml') return void s.out.out.write(toYaml(name === undefined ? { items } : items[0]));
  if (!items.length) return line(s.out.err, 'No projects found.');
  if (output === 'name') return void s.out.out.write(items.map((p) => `project/${p.metadata.name}\n`).join(''));
  s.out.out.write(withoutHeaders(formatProjects(items, s.deps.now()), !headers));
}

/** `outpost describe project NAME`. */
export async function describeProject(s: Session, name: string): Promise<void> {
  const p = await s.client.get<Shown>(`/api/v1/projects/${encodeURIComponent(name)}`, {
    subject: { kind: 'project', name },
  });
  const c = usageCells(p);
  const out: string[] = [
    `Name:         ${p.metadata.name}`,
    `Description:  ${p.spec.description ?? '-'}`,
    `Phase:        ${p.status?.phase ?? 'Active'}${p.status?.remaining ? ` (${p.status.remaining})` : ''}`,
    `Created:      ${p.metadata.creationTimestamp ?? '-'}`,
    `Default rollout: maxUnavailable ${p.spec.rollout?.maxUnavailable ?? '25% (the hub default)'}${p.spec.rollout?.skipOfflineAfter ? `, skipOfflineAfter ${p.spec.rollout.skipOfflineAfter}` : ''}`,
    'Use (of quota):',
    ...Object.entries(c).map(([k, v]) => `  ${k.padEnd(16)} ${v}`),
    `Members (take effect with sign-in through an identity provider):`,
    ...(p.spec.members.length
      ? p.spec.members.map((m) => `  ${m.user ? `user ${m.user}` : `group ${m.group}`}: ${m.role}`)
      : ['  none']),
  ];
  s.out.out.write(`${out.join('\n')}\n`);
}

/** `outpost delete project NAME [--move-edges-to OTHER | --decommission-edges]`. */
export async function deleteProject(
  s: Session,
  name: string,
  o: { moveEdgesTo?: string; decommissionEdges?: boolean },
): Promise<void> {
  const p = await s.client.delete<Shown>(`/api/v1/projects/${encodeURIComponent(name)}`, {
    subject: { kind: 'project', name },
    query: {
      ...(o.moveEdgesTo ? { moveEdgesTo: o.moveEdgesTo } : {}),
      ...(o.decommissionEdges ? { decommissionEdges: 'true' } : {}),
    },
  });
  line(
    s.out.out,
    `project/${name} deletion started (phase ${p?.status?.phase ?? 'Terminating'}): follow it with \`outpost get project ${name}\``,
  );
}
