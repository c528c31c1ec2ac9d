/** @module A minimal client of the hub's REST API (docs/api.md) for the harness: tokens, apply, status. */
import https from 'node:https';

export interface Summary {
  total: number;
  ready: number;
  states: Record<string, number>;
}

export interface PlacementStatusView {
  selectedEdges: number;
  summary: Summary;
}

export class HubApi {
  constructor(
    private readonly url: string,
    private readonly token: string,
    /** The hub's CA, for a hub that serves HTTPS with its own (fetch cannot be given one). */
    private readonly ca?: string,
  ) {}

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    if (this.ca) return this.requestTls<T>(method, path, body);
    const res = await fetch(`${this.url}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as T;
  }

  private requestTls<T>(method: string, path: string, body?: unknown): Promise<T> {
    const data = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = https.request(
        `${this.url}/api/v1${path}`,
        {
          method,
          ca: this.ca,
          headers: {
            authorization: `Bearer ${this.token}`,
            ...(data === undefined ? {} : { 'content-type': 'application/json' }),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            if ((res.statusCode ?? 0) >= 400)
              reject(new Error(`${method} ${path}: HTTP ${res.statusCode}: ${text.slice(0, 500)}`));
            else resolve(JSON.parse(text) as T);
          });
        },
      );
      req.on('error', reject);
      req.end(data);
    });
  }

  async joinToken(uses: number, labels: Record<string, string>): Promise<string> {
    const r = await this.request<{ token: string }>('POST', '/tokens/join', {
      project: 'default',
      labels,
      uses,
      ttl: '2h',
    });
    return r.token;
  }

  apply(objects: unknown[]): Promise<{ results: { kind: string; name: string; action: string }[] }> {
    return this.request('POST', '/apply', { objects });
  }

  async placement(name: string): Promise<PlacementStatusView> {
    const p = await this.request<{ status: PlacementStatusView }>('GET', `/projects/default/placements/${name}`);
    return p.status;
  }

  edge<T = Record<string, unknown>>(name: string): Promise<{ status: T }> {
    return this.request('GET', `/projects/default/edges/${name}`);
  }
}

/** A workload whose single Pod the process driver could run; the simulator only reports it Ready. */
export function workload(
  name: string,
  image = 'bench:1',
  command: string[] = ['sleep', '100000'],
): Record<string, unknown> {
  return {
    apiVersion: 'outpost.dev/v1alpha1',
    kind: 'Workload',
    metadata: { name, project: 'default' },
    spec: {
      manifests: [
        { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'main', image, command }] } },
      ],
    },
  };
}

export function placement(
  name: string,
  workloads: string[],
  select: { labels?: Record<string, string>; edges?: string[] },
  round?: number,
  /** More customization rules after the round's (fanout's one replica's edges at a time). */
  rules: Record<string, unknown>[] = [],
): Record<string, unknown> {
  return {
    apiVersion: 'outpost.dev/v1alpha1',
    kind: 'Placement',
    metadata: { name, project: 'default' },
    spec: {
      ...(select.labels ? { edgeSelector: { matchLabels: select.labels } } : {}),
      ...(select.edges ? { edges: select.edges } : {}),
      workloads,
      // Every edge at once: the fan-out measured is one change to the whole fleet (a placement's
      // default is 25% at a time, core/resources.ts DEFAULT_MAX_UNAVAILABLE).
      rollout: { maxUnavailable: '100%' },
      // A customization that changes every edge's manifests: the "one Placement change" of fan-out.
      customization: [
        ...(round === undefined
          ? []
          : [{ patch: { metadata: { annotations: { 'bench.outpost.dev/round': String(round) } } } }]),
        ...rules,
      ],
    },
  };
}
