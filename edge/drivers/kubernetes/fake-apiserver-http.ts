/**
 * @module Request handling of the Kubernetes API server stand-in (test support, see
 * `fake-apiserver.ts`): URL parsing, discovery, GET/LIST (label selectors, Table output for
 * kubectl), create, server-side apply and merge patches, DELETE with propagation, pod logs.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { matchesSelector, parseSelectorString } from '../../../core/selector.js';
import type { Controllers } from './fake-apiserver-controllers.js';
import type { Kubelet } from './fake-apiserver-kubelet.js';
import {
  ApiError,
  ObjectStore,
  RESOURCES,
  apiResourceList,
  groupVersion,
  mergePatch,
  notFound,
  qualified,
  render,
  serverSideApply,
  statusError,
  validate,
  type Obj,
  type ResourceType,
  type StoredObject,
} from './fake-apiserver-store.js';

export interface Target {
  type: ResourceType;
  ns?: string;
  name?: string;
  sub?: string;
}

/** `/api/v1/namespaces/x/pods/y/log` -> { Pod, ns x, name y, sub log }; undefined when no resource matches. */
export function parseTarget(path: string): Target | undefined {
  const segs = path.split('/').filter(Boolean).map(decodeURIComponent);
  let group = '';
  let rest: string[];
  if (segs[0] === 'api' && segs[1] === 'v1') rest = segs.slice(2);
  else if (segs[0] === 'apis' && segs.length >= 3) {
    group = segs[1];
    rest = segs.slice(3);
  } else return undefined;
  const version = segs[0] === 'api' ? 'v1' : segs[2];
  const find = (plural: string | undefined): ResourceType | undefined =>
    RESOURCES.find((r) => r.group === group && r.version === version && r.plural === plural);
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const type = find(rest[2]);
    if (type?.namespaced) return { type, ns: rest[1], name: rest[3], sub: rest[4] };
  }
  const type = find(rest[0]);
  return type ? { type, name: rest[1], sub: rest[2] } : undefined;
}

export function discovery(path: string): Obj | undefined {
  const gvs = [...new Set(RESOURCES.filter((r) => r.group).map((r) => `${r.group}/${r.version}`))];
  if (path === '/version')
    return {
      major: '1',
      minor: '31',
      gitVersion: 'v1.31.0+outpost-standin',
      gitCommit: '',
      gitTreeState: 'clean',
      buildDate: '2024-08-13T00:00:00Z',
      goVersion: 'go1.22.5',
      compiler: 'gc',
      platform: 'linux/amd64',
    };
  if (path === '/api')
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }],
    };
  const group = (name: string): Obj => {
    const versions = gvs
      .filter((gv) => gv.startsWith(`${name}/`))
      .map((gv) => ({ groupVersion: gv, version: gv.split('/')[1] }));
    return { name, versions, preferredVersion: versions[0] };
  };
  const names = [...new Set(gvs.map((gv) => gv.split('/')[0]))];
  if (path === '/apis') return { kind: 'APIGroupList', apiVersion: 'v1', groups: names.map(group) };
  const m = /^\/apis\/([^/]+)$/.exec(path);
  if (m && names.includes(m[1])) return { kind: 'APIGroup', apiVersion: 'v1', ...group(m[1]) };
  if (path === '/api/v1') return apiResourceList('', 'v1');
  const g = /^\/apis\/([^/]+)\/([^/]+)$/.exec(path);
  return g ? apiResourceList(g[1], g[2]) : undefined;
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

const now = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const NAMESPACE = RESOURCES.find((r) => r.kind === 'Namespace')!;

function age(obj: Obj): string {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(obj.metadata.creationTimestamp)) / 1000));
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.floor(s / 60)}m` : `${Math.floor(s / 3600)}h`;
}

/** The server-side printing kubectl asks for (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`). */
function table(type: ResourceType, items: StoredObject[], rv: string): Obj {
  const col = (name: string, t = 'string', format = ''): Obj => ({
    name,
    type: t,
    format,
    description: name,
    priority: 0,
  });
  let columns = [col('Name', 'string', 'name'), col('Age')];
  let cells = (o: Obj): unknown[] => [o.metadata.name, age(o)];
  if (type.kind === 'Deployment') {
    columns = [
      col('Name', 'string', 'name'),
      col('Ready'),
      col('Up-to-date', 'integer'),
      col('Available', 'integer'),
      col('Age'),
    ];
    cells = (o) => [
      o.metadata.name,
      `${o.status?.readyReplicas ?? 0}/${o.spec?.replicas ?? 1}`,
      o.status?.updatedReplicas ?? 0,
      o.status?.availableReplicas ?? 0,
      age(o),
    ];
  } else if (type.kind === 'Pod') {
    columns = [col('Name', 'string', 'name'), col('Ready'), col('Status'), col('Restarts', 'integer'), col('Age')];
    cells = (o) => {
      const cs = (o.status?.containerStatuses ?? []) as Obj[];
      const waiting = cs.find((c) => c.state?.waiting)?.state.waiting.reason;
      const st = o.metadata.deletionTimestamp ? 'Terminating' : (waiting ?? o.status?.phase ?? 'Pending');
      return [
        o.metadata.name,
        `${cs.filter((c) => c.ready).length}/${(o.spec?.containers ?? []).length}`,
        st,
        cs.reduce((n, c) => n + (c.restartCount ?? 0), 0),
        age(o),
      ];
    };
  } else if (type.kind === 'Namespace') {
    columns = [col('Name', 'string', 'name'), col('Status'), col('Age')];
    cells = (o) => [o.metadata.name, o.status?.phase ?? 'Active', age(o)];
  }
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: rv },
    columnDefinitions: columns,
    rows: items.map((s) => {
      const { managedFields: _omit, ...metadata } = render(s).metadata;
      return { cells: cells(s.obj), object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata } };
    }),
  };
}

function defaults(type: ResourceType, obj: Obj, store: ObjectStore): void {
  if (type.kind === 'Deployment') {
    obj.spec.replicas ??= 1;
    obj.spec.progressDeadlineSeconds ??= 600;
    obj.spec.revisionHistoryLimit ??= 10;
    obj.spec.strategy ??= { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } };
  }
  if (type.kind === 'Pod') {
    obj.spec.restartPolicy ??= 'Always';
    obj.status ??= { phase: 'Pending', qosClass: 'BestEffort' };
  }
  if (type.kind === 'Service') {
    obj.spec ??= {};
    obj.spec.type ??= 'ClusterIP';
    obj.spec.sessionAffinity ??= 'None';
    if (!obj.spec.clusterIP) {
      const used = new Set(store.list(type).map((s) => s.obj.spec?.clusterIP));
      let n = 10;
      while (used.has(`10.96.0.${n}`)) n++;
      obj.spec.clusterIP = `10.96.0.${n}`;
      obj.spec.clusterIPs = [obj.spec.clusterIP];
    }
  }
  if (type.kind === 'Namespace') {
    obj.spec ??= { finalizers: ['kubernetes'] };
    obj.status ??= { phase: 'Active' };
    obj.metadata.labels = { ...(obj.metadata.labels ?? {}), 'kubernetes.io/metadata.name': obj.metadata.name };
  }
}

export class Handler {
  constructor(
    private readonly store: ObjectStore,
    private readonly controllers: Controllers,
    private readonly kubelet: Kubelet,
  ) {}

  private checkNamespace(t: Target, name: string): void {
    if (!t.type.namespaced) return;
    const ns = this.store.get(NAMESPACE, undefined, t.ns!);
    if (!ns) throw notFound(NAMESPACE, t.ns!);
    if (ns.obj.metadata.deletionTimestamp) {
      const message = `unable to create new content in namespace ${t.ns} because it is being terminated`;
      throw statusError(403, 'Forbidden', `${qualified(t.type)} "${name}" is forbidden: ${message}`, {
        name,
        ...(t.type.group ? { group: t.type.group } : {}),
        kind: t.type.plural,
        causes: [{ reason: 'NamespaceTerminating', message, field: 'metadata.namespace' }],
      });
    }
  }

  private commit(t: Target, obj: Obj, owners: StoredObject['owners'], old: StoredObject | undefined): StoredObject {
    if (t.type.namespaced) obj.metadata.namespace = t.ns;
    defaults(t.type, obj, this.store);
    validate(t.type, obj, old?.obj);
    return this.store.put(t.type, obj, owners);
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const disc = req.method === 'GET' ? discovery(url.pathname) : undefined;
    if (disc) return sendJson(res, 200, disc);
    const t = parseTarget(url.pathname);
    if (!t)
      throw statusError(404, 'NotFound', 'the server could not find the requested resource', {
        causes: [{ reason: 'UnexpectedServerResponse', message: '404 page not found' }],
      });
    const q = url.searchParams;
    if (t.sub === 'log' && t.type.kind === 'Pod' && req.method === 'GET') return this.log(req, res, t, q);
    if (t.sub)
      throw statusError(
        404,
        'NotFound',
        `the server could not find the requested resource (${req.method} ${t.type.plural}/${t.sub})`,
      );
    const asTable = /as=Table/.test(String(req.headers.accept ?? ''));
    if (req.method === 'GET' && t.name === undefined) {
      const matches = this.matcher(q);
      if (q.get('watch') === '1' || q.get('watch') === 'true') return this.watch(req, res, t, matches);
      const items = this.store.list(t.type, t.ns).filter(matches);
      if (asTable) return sendJson(res, 200, table(t.type, items, this.store.resourceVersion));
      return sendJson(res, 200, {
        kind: `${t.type.kind}List`,
        apiVersion: groupVersion(t.type),
        metadata: { resourceVersion: this.store.resourceVersion },
        items: items.map((s) => {
          const { apiVersion: _a, kind: _k, ...rest } = render(s);
          return rest;
        }),
      });
    }
    if (t.name === undefined && req.method !== 'POST')
      throw statusError(
        405,
        'MethodNotAllowed',
        `the server does not allow this method on the requested resource (${req.method} ${t.type.plural})`,
      );
    const body = req.method === 'GET' || req.method === 'DELETE' ? '' : await readBody(req);

    if (req.method === 'POST') {
      const obj = JSON.parse(body) as Obj;
      const name = String(obj.metadata?.name ?? '');
      this.checkNamespace(t, name);
      if (this.store.get(t.type, t.ns, name))
        throw statusError(409, 'AlreadyExists', `${qualified(t.type)} "${name}" already exists`, {
          name,
          ...(t.type.group ? { group: t.type.group } : {}),
          kind: t.type.plural,
        });
      const { obj: merged, owners } = serverSideApply(undefined, obj, q.get('fieldManager') ?? 'unknown', true, now());
      owners.forEach((o) => (o.operation = 'Update'));
      return sendJson(res, 201, render(this.commit(t, { ...merged, status: obj.status }, owners, undefined)));
    }

    const name = t.name!;
    const live = this.store.get(t.type, t.ns, name);
    if (req.method === 'GET') {
      if (!live) throw notFound(t.type, name);
      return sendJson(res, 200, asTable ? table(t.type, [live], this.store.resourceVersion) : render(live));
    }
    if (req.method === 'PATCH') return this.patch(req, res, t, name, live, body, q);
    if (req.method === 'DELETE') return this.delete(res, t, name, live, q, await readBody(req));
    throw statusError(
      405,
      'MethodNotAllowed',
      `the server does not allow this method on the requested resource (${req.method} ${t.type.plural})`,
    );
  }

  /** labelSelector plus the fieldSelectors kubectl uses (metadata.name, metadata.namespace). */
  private matcher(q: URLSearchParams): (s: StoredObject) => boolean {
    const sel = q.get('labelSelector');
    let selector;
    try {
      selector = sel ? parseSelectorString(sel) : {};
    } catch (err) {
      throw statusError(400, 'BadRequest', `unable to parse requirement: ${(err as Error).message}`);
    }
    const fields: [string, string][] = [];
    for (const part of (q.get('fieldSelector') ?? '').split(',').filter(Boolean)) {
      const m = /^(metadata\.name|metadata\.namespace)==?(.*)$/.exec(part);
      if (!m)
        throw statusError(
          400,
          'BadRequest',
          `"${part}" is not a known field selector: only "metadata.name", "metadata.namespace"`,
        );
      fields.push([m[1], m[2]]);
    }
    return (s) =>
      matchesSelector(s.obj.metadata.labels ?? {}, selector) &&
      fields.every(([f, v]) => (f === 'metadata.name' ? s.obj.metadata.name : s.obj.metadata.namespace) === v);
  }

  /**
   * Watch as JSON lines of `{type, object}`. It diffs snapshots on a short period instead of
   * hooking writes: simpler, and a watcher cannot tell the difference. Every change since the
   * request is sent; resourceVersion positioning is not supported (a client that asks for
   * history gets only what changed after it connected, which informers tolerate).
   */
  private watch(req: IncomingMessage, res: ServerResponse, t: Target, matches: (s: StoredObject) => boolean): void {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    const snapshot = (): Map<string, StoredObject> =>
      new Map(
        this.store
          .list(t.type, t.ns)
          .filter(matches)
          .map((s) => [s.obj.metadata.uid as string, s]),
      );
    let seen = snapshot();
    const send = (type: string, s: StoredObject): void =>
      void res.write(`${JSON.stringify({ type, object: render(s) })}\n`);
    const timer = setInterval(() => {
      const next = snapshot();
      for (const [uid, s] of next) {
        const prev = seen.get(uid);
        if (!prev) send('ADDED', s);
        else if (prev.obj.metadata.resourceVersion !== s.obj.metadata.resourceVersion) send('MODIFIED', s);
      }
      for (const [uid, s] of seen) if (!next.has(uid)) send('DELETED', s);
      seen = next;
    }, 50);
    req.on('close', () => {
      clearInterval(timer);
      res.end();
    });
  }

  private patch(
    req: IncomingMessage,
    res: ServerResponse,
    t: Target,
    name: string,
    live: StoredObject | undefined,
    body: string,
    q: URLSearchParams,
  ): void {
    const ctype = String(req.headers['content-type'] ?? '')
      .split(';')[0]
      .trim();
    if (ctype === 'application/apply-patch+yaml') {
      const manager = q.get('fieldManager');
      if (!manager)
        throw statusError(
          400,
          'BadRequest',
          'PATCH, application/apply-patch+yaml requests require fieldManager to be set',
        );
      let cfg: Obj;
      try {
        cfg = parseYaml(body) as Obj;
      } catch (err) {
        throw statusError(400, 'BadRequest', `error decoding YAML: ${(err as Error).message}`);
      }
      if (cfg?.kind !== t.type.kind || cfg?.apiVersion !== groupVersion(t.type))
        throw statusError(
          400,
          'BadRequest',
          `the body of the request was in an unknown format - accepted media types include: application/apply-patch+yaml (want ${groupVersion(t.type)} ${t.type.kind}, got ${cfg?.apiVersion} ${cfg?.kind})`,
        );
      if (cfg.metadata?.name !== name)
        throw statusError(
          400,
          'BadRequest',
          `the name of the object (${cfg.metadata?.name}) does not match the name on the URL (${name})`,
        );
      if (cfg.metadata?.namespace && cfg.metadata.namespace !== t.ns)
        throw statusError(
          400,
          'BadRequest',
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      if (!live) this.checkNamespace(t, name);
      const force = q.get('force') === 'true' || q.get('force') === '1';
      const { obj, owners } = serverSideApply(live, cfg, manager, force, now());
      if (live) obj.status = live.obj.status;
      const stored = this.commit(t, obj, owners, live);
      return sendJson(res, live ? 200 : 201, render(stored));
    }
    if (ctype !== 'application/merge-patch+json' && ctype !== 'application/strategic-merge-patch+json') {
      throw statusError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
      );
    }
    if (!live) throw notFound(t.type, name);
    const patched = mergePatch(live.obj, JSON.parse(body) as Obj);
    const manager = q.get('fieldManager') ?? 'unknown';
    const owners = live.owners.filter((o) => !(o.manager === manager && o.operation === 'Update'));
    const touched = serverSideApply(
      undefined,
      { apiVersion: live.obj.apiVersion, kind: live.obj.kind, metadata: { name }, ...JSON.parse(body) },
      manager,
      true,
      now(),
    ).owners;
    touched.forEach((o) => (o.operation = 'Update'));
    return sendJson(res, 200, render(this.commit(t, patched, [...owners, ...touched], live)));
  }

  private delete(
    res: ServerResponse,
    t: Target,
    name: string,
    live: StoredObject | undefined,
    q: URLSearchParams,
    body: string,
  ): void {
    if (!live) throw notFound(t.type, name);
    let policy = q.get('propagationPolicy') ?? undefined;
    if (!policy && body) policy = (JSON.parse(body) as Obj).propagationPolicy;
    const obj = structuredClone(live.obj);
    if (t.type.kind === 'Pod') {
      this.controllers.terminatePod(live);
      return sendJson(res, 200, render(this.store.get(t.type, t.ns, name) ?? live));
    }
    if (t.type.kind === 'Namespace') {
      if (!obj.metadata.deletionTimestamp) {
        obj.metadata.deletionTimestamp = now();
        obj.status = { phase: 'Terminating' };
        this.store.put(t.type, obj, live.owners);
      }
      return sendJson(res, 200, render(this.store.get(t.type, undefined, name)!));
    }
    if (t.type.kind === 'Deployment' && policy === 'Foreground') {
      obj.metadata.deletionTimestamp ??= now();
      obj.metadata.finalizers = ['foregroundDeletion'];
      return sendJson(res, 200, render(this.store.put(t.type, obj, live.owners)));
    }
    if (t.type.kind === 'Deployment' && policy === 'Orphan') {
      for (const p of this.store.list(
        RESOURCES.find((r) => r.kind === 'Pod')!,
        t.ns,
      )) {
        const ref = p.obj.metadata.ownerReferences?.[0];
        if (ref?.kind === 'ReplicaSet' && ref.name.startsWith(`${name}-`)) {
          const po = structuredClone(p.obj);
          delete po.metadata.ownerReferences;
          this.store.put(p.type, po, p.owners);
        }
      }
    }
    this.store.delete(t.type, t.ns, name);
    return sendJson(res, 200, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: {
        name,
        ...(t.type.group ? { group: t.type.group } : {}),
        kind: t.type.plural,
        uid: live.obj.metadata.uid,
      },
    });
  }

  private log(req: IncomingMessage, res: ServerResponse, t: Target, q: URLSearchParams): void {
    const live = this.store.get(t.type, t.ns, t.name!);
    if (!live) throw notFound(t.type, t.name!);
    const names = ((live.obj.spec?.containers ?? []) as Obj[]).map((c) => c.name as string);
    let container = q.get('container') || undefined;
    if (!container) {
      if (names.length !== 1)
        throw statusError(
          400,
          'BadRequest',
          `a container name must be specified for pod ${t.name}, choose one of: [${names.join(' ')}]`,
        );
      container = names[0];
    }
    if (!names.includes(container))
      throw statusError(400, 'BadRequest', `container ${container} is not valid for pod ${t.name}`);
    const lines = this.kubelet.logLines(t.ns!, t.name!, container);
    const waiting = ((live.obj.status?.containerStatuses ?? []) as Obj[]).find((c) => c.name === container)?.state
      ?.waiting;
    if (!lines || (lines.length === 0 && waiting && waiting.reason !== 'CrashLoopBackOff')) {
      throw statusError(
        400,
        'BadRequest',
        `container "${container}" in pod "${t.name}" is waiting to start: ${waiting?.reason ?? 'ContainerCreating'}`,
      );
    }
    const tail = q.get('tailLines');
    const shown = tail !== null && tail !== '' ? lines.slice(Math.max(0, lines.length - Number(tail))) : [...lines];
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked' });
    for (const l of shown) res.write(`${l}\n`);
    if (q.get('follow') !== 'true') return void res.end();
    const stop = this.kubelet.follow(t.ns!, t.name!, container, (l) => res.write(`${l}\n`));
    // A real follow ends when the container stops; here it ends with the pod or the client.
    const timer = setInterval(() => {
      if (!this.store.get(t.type, t.ns, t.name!)) end();
    }, 200);
    const end = (): void => {
      clearInterval(timer);
      stop?.();
      res.end();
    };
    req.on('close', end);
  }
}

export function sendError(res: ServerResponse, err: unknown): void {
  if (res.headersSent) return void res.end();
  if (err instanceof ApiError) return sendJson(res, err.code, err.status);
  const message = err instanceof Error ? err.message : String(err);
  sendJson(res, 500, statusError(500, 'InternalError', `Internal error occurred: ${message}`).status);
}

export { ObjectStore };
