/** @module Edge lifecycle routes: enroll (join token), approve, label, drain/uncordon, decommission, clear local intents. */
import { Hono } from 'hono';
import { z } from 'zod';
import { OutpostError } from '../../core/errors.js';
import { edgeName, isValidName, mailboxDocId } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import { readReport, readSpec, type ReportDoc, type SpecDoc } from '../../core/mailbox.js';
import { API_VERSION, formatIssues, Inventory, Labels, type Edge } from '../../core/resources.js';
import { isSealKey } from '../../core/secrets.js';
import { enrollLabels } from '../auth/join-tokens.js';
import { recordEvent } from '../db.js';
import { storeInventory } from '../controllers/edges.js';
import { authorize, jsonBody, type Env, type HubDeps } from './context.js';
import { withStatus } from './objects.js';

const log = createLogger('hub:api');

const EnrollRequest = z.object({
  joinToken: z.string().min(1, 'is required: create one with `outpost token create`'),
  name: z
    .string()
    .refine(isValidName, 'must be 1-63 lower-case letters, digits or "-", starting and ending with a letter or digit'),
  labels: Labels.optional(),
  inventory: Inventory.optional(),
  /** The public half of the key pair the agent just made; Secrets for this edge are sealed to it. */
  sealKey: z.string().refine(isSealKey, 'must be an X25519 public key: 43 base64url characters').optional(),
});

export function edgeRoutes(deps: HubDeps): Hono<Env> {
  const app = new Hono<Env>();
  const { db, objects, store, scheduler, auth } = deps;

  const getEdge = (project: string, name: string): Edge => {
    const e = objects.get<Edge>('Edge', project, name);
    if (!e) throw new OutpostError('not_found', `edge ${name} not found in project ${project}`);
    return e;
  };
  const actorOf = (c: { get(k: 'principal'): { role: string; tokenId: string } }) =>
    `${c.get('principal').role} token ${c.get('principal').tokenId}`;

  app.post('/projects/:project/edges/:name/approve', (c) => {
    const project = c.req.param('project');
    authorize(c, 'admin', project);
    const e = getEdge(project, c.req.param('name'));
    db.prepare('UPDATE edge_runtime SET approved = 1 WHERE name = ?').run(e.metadata.name);
    recordEvent(db, {
      project,
      kind: 'Edge',
      name: e.metadata.name,
      reason: 'Approved',
      message: `edge ${e.metadata.name} approved by ${actorOf(c)}`,
    });
    scheduler.markEdge(e.metadata.name);
    return c.json(withStatus(deps, e));
  });

  app.post('/projects/:project/edges/:name/labels', async (c) => {
    const project = c.req.param('project');
    authorize(c, 'write', project);
    const e = getEdge(project, c.req.param('name'));
    const body = await jsonBody<{ labels?: Record<string, string | null> }>(c);
    if (!body.labels || typeof body.labels !== 'object')
      throw new OutpostError('invalid', 'labels: must be an object of key: value (null removes a label)');
    const labels = { ...e.metadata.labels };
    for (const [k, v] of Object.entries(body.labels)) {
      if (v === null) delete labels[k];
      else labels[k] = v;
    }
    const r = objects.apply(
      { ...e, metadata: { ...e.metadata, resourceVersion: undefined, labels } },
      { create: false, actor: actorOf(c) },
    );
    return c.json(withStatus(deps, r.object));
  });

  for (const [verb, unschedulable] of [
    ['drain', true],
    ['uncordon', false],
  ] as const) {
    app.post(`/projects/:project/edges/:name/${verb}`, (c) => {
      const project = c.req.param('project');
      authorize(c, 'write', project);
      const e = getEdge(project, c.req.param('name'));
      const r = objects.apply(
        { ...e, metadata: { ...e.metadata, resourceVersion: undefined }, spec: { ...e.spec, unschedulable } },
        { create: false, actor: actorOf(c) },
      );
      recordEvent(db, {
        project,
        kind: 'Edge',
        name: e.metadata.name,
        reason: verb === 'drain' ? 'Drained' : 'Uncordoned',
        message: `edge ${e.metadata.name} ${verb === 'drain' ? 'drained: its workloads are being removed' : 'schedulable again'}`,
      });
      return c.json(withStatus(deps, r.object));
    });
  }

  app.post('/projects/:project/edges/:name/decommission', (c) => {
    const project = c.req.param('project');
    authorize(c, 'admin', project);
    const e = getEdge(project, c.req.param('name'));
    const name = e.metadata.name;
    auth.decommissionEdgeCredential(name);
    deps.disconnectEdge(name, `edge ${name} was decommissioned: its credential is revoked`);
    db.transaction(() => {
      store.delete(mailboxDocId(edgeName(name), 'spec'));
      store.delete(mailboxDocId(edgeName(name), 'report'));
      db.prepare('DELETE FROM assignments WHERE edge = ?').run(name);
      db.prepare('DELETE FROM spec_written WHERE edge = ?').run(name);
      db.prepare('DELETE FROM workload_status WHERE edge = ?').run(name);
      db.prepare('DELETE FROM edge_runtime WHERE name = ?').run(name);
      db.prepare("DELETE FROM objects WHERE kind = 'Edge' AND project = ? AND name = ?").run(project, name);
      recordEvent(db, {
        project,
        kind: 'Edge',
        name,
        reason: 'Decommissioned',
        message: `edge ${name} decommissioned by ${actorOf(c)}: credential revoked, mailbox forgotten`,
      });
    })();
    scheduler.markEdge(name);
    return c.json({ decommissioned: name });
  });

  app.post('/projects/:project/edges/:name/clear-intents', async (c) => {
    const project = c.req.param('project');
    authorize(c, 'write', project);
    const e = getEdge(project, c.req.param('name'));
    const body = await jsonBody<{ workload?: string }>(c);
    if (!body.workload) throw new OutpostError('invalid', 'workload: is required');
    const en = edgeName(e.metadata.name);
    const report = store.get<ReportDoc>(mailboxDocId(en, 'report'));
    const spec = store.get<SpecDoc>(mailboxDocId(en, 'spec'));
    if (!report || !spec) throw new OutpostError('not_found', `edge ${en} has not synced yet`);
    const intents = readReport(report).intents.filter((i) => i.workload === body.workload);
    const upTo = intents.reduce((m, i) => Math.max(m, i.seq), 0);
    if (upTo <= (readSpec(spec).intentsCleared[body.workload] ?? 0)) return c.json({ cleared: 0 });
    store.change<SpecDoc>(mailboxDocId(en, 'spec'), (d) => {
      d.intentsCleared[body.workload!] = upTo;
    });
    recordEvent(db, {
      project,
      kind: 'Edge',
      name: en,
      reason: 'IntentsCleared',
      message: `local intents for ${body.workload} up to #${upTo} cleared by ${actorOf(c)}`,
    });
    return c.json({ cleared: intents.length, upTo });
  });

  return app;
}

/** POST /api/v1/enroll: the only unauthenticated write; the join token is the authorization. */
export function enrollRoute(deps: HubDeps): Hono {
  const app = new Hono();
  const { db, objects, auth, scheduler } = deps;
  app.post('/enroll', async (c) => {
    const parsed = EnrollRequest.safeParse(await jsonBody(c));
    if (!parsed.success) {
      const issues = formatIssues(parsed.error);
      throw new OutpostError('invalid', issues.map((i) => `${i.path}: ${i.message}`).join('; '), { details: issues });
    }
    const req = parsed.data;
    const approved = !deps.requireApproval;
    // The join token is consumed in the same transaction that creates the edge: a failed
    // enrollment gives the use back. It is checked before the name, so only a token holder
    // learns whether a name is taken.
    const { grant, credential } = db
      .transaction(() => {
        const grant = auth.consumeJoinToken(req.joinToken);
        if (db.prepare('SELECT 1 FROM edge_runtime WHERE name = ?').get(req.name)) {
          throw new OutpostError(
            'conflict',
            `edge ${req.name} is already enrolled: start the agent with its existing data directory, or decommission it first (outpost edge decommission ${req.name}) to enroll it again`,
          );
        }
        const labels = enrollLabels(grant, req.labels);
        objects.apply(
          {
            apiVersion: API_VERSION,
            kind: 'Edge',
            metadata: { name: req.name, project: grant.project, labels, annotations: {} },
            spec: { unschedulable: false },
          } as Edge,
          { update: false, actor: 'enrollment' },
        );
        db.prepare('INSERT INTO edge_runtime (name, project, approved, enrolled_at) VALUES (?, ?, ?, ?)').run(
          req.name,
          grant.project,
          approved ? 1 : 0,
          Date.now(),
        );
        if (req.inventory) storeInventory(db, req.name, req.inventory);
        recordEvent(db, {
          project: grant.project,
          kind: 'Edge',
          name: req.name,
          reason: 'Enrolled',
          message: `edge ${req.name} enrolled${approved ? '' : ', waiting for approval (outpost edge approve ' + req.name + ')'}`,
        });
        return { grant, credential: auth.issueEdgeCredential(req.name, req.sealKey) };
      })
      .immediate();
    log.info({ edge: req.name, project: grant.project, approved }, 'edge enrolled');
    scheduler.markEdge(req.name);
    return c.json(
      {
        edge: req.name,
        project: grant.project,
        credential,
        approved,
        ...(deps.releases ? { releaseKey: deps.releases.publicKeyPem } : {}),
      },
      201,
    );
  });
  return app;
}
