/**
 * @module `outpost data ls|get`: the files edges' workloads exported (docs/data.md). A file's
 * bytes are a blob of the project, downloaded by its digest. `outpost data publish`: a file
 * delivered to the edges a selector picks, as a DataObject.
 */
import fs from 'node:fs';
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { ApplyResponse } from '../core/api/types.js';
import { DEFAULT_MEDIA_TYPE } from '../core/blobs.js';
import { isExportPath, type DataFile, type EgressQueue } from '../core/data.js';
import { parseDuration } from '../core/durations.js';
import { isValidName } from '../core/ids.js';
import { API_VERSION, isObjectPath, type DataObject } from '../core/resources.js';
import { parseSelectorString } from '../core/selector.js';
import { formatSize, pushBlob } from './cmd-blob.js';
import { HubError } from './client.js';
import { openSession, type CliDeps } from './context.js';
import { CliError, UsageError } from './errors.js';
import { formatTable, line, toJson, toYaml } from './output.js';

function parseEdgeRef(s: string): string {
  const m = /^(?:edges?\/)?([^/]+)$/.exec(s);
  if (!m || !isValidName(m[1]))
    throw new InvalidArgumentError(`invalid edge "${s}": write edge/NAME, e.g. edge/shop-12`);
  return m[1];
}

function parseWorkload(s: string): string {
  if (!isValidName(s))
    throw new InvalidArgumentError(`invalid workload name "${s}": 1-63 lower-case letters, digits or "-"`);
  return s;
}

function parsePath(s: string): string {
  if (!isExportPath(s))
    throw new InvalidArgumentError(
      `invalid path "${s}": write TARGET/relative/path as \`outpost data ls\` lists it, e.g. results/2026/run-1.csv`,
    );
  return s;
}

/** `2026-12-01T06:00:00Z` as given, or `+15m` / `15m` from now: an ISO time for the DataObject. */
export function parseTime(s: string, now = Date.now()): string {
  const rel = /^\+?(\d+(?:\.\d+)?(?:ms|s|m|h|d))$/.exec(s.trim());
  if (rel) return new Date(now + parseDuration(rel[1]!)).toISOString();
  const t = Date.parse(s);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(s) || Number.isNaN(t))
    throw new InvalidArgumentError(
      `invalid time "${s}": write an ISO time with a zone (2026-12-01T06:00:00Z) or a delay from now (+15m, 2h)`,
    );
  return new Date(t).toISOString();
}

/** The version after `v3` is `v4`; after anything else (or nothing) `v1`, unless told. */
export function nextVersion(current: string | undefined): string {
  const m = current ? /^v(\d+)$/.exec(current) : null;
  return m ? `v${Number(m[1]) + 1}` : 'v1';
}

interface PublishOptions {
  file: string;
  name: string;
  dataVersion?: string;
  selector?: string;
  edges?: string;
  path?: string;
  activateAt?: string;
  expiresAt?: string;
}

export function registerDataCommands(program: Command, deps: CliDeps): void {
  const data = program
    .command('data')
    .description("files the edges' workloads export to the hub, and files the hub delivers to edges (docs/data.md)");
  data
    .command('publish')
    .description(
      'upload a file and deliver it to the edges a selector picks (a DataObject; a new version supersedes the old)',
    )
    .requiredOption('-f, --file <file>', 'the file to deliver')
    .requiredOption('--name <name>', 'the DataObject name, e.g. model', (v: string) => {
      if (!isValidName(v))
        throw new InvalidArgumentError(`invalid name "${v}": 1-63 lower-case letters, digits or "-"`);
      return v;
    })
    // Not --version: that is the program's own flag, which commander answers first.
    .option('--data-version <version>', 'the version edges report (default: v1, then the next vN)')
    .option('-l, --selector <selector>', 'the edges that get it, e.g. region=eu (default with no --edges: every edge)')
    .option('--edges <names>', 'these edges too, comma-separated')
    .option('--path <path>', "where it lands under the edge's objects directory (default: the name)", (v: string) => {
      if (!isObjectPath(v))
        throw new InvalidArgumentError(
          `invalid path "${v}": a relative path without ".", ".." or hidden segments, e.g. models/detector.onnx`,
        );
      return v;
    })
    .option(
      '--activate-at <time>',
      'replace the previous version on the edges at this time (ISO, or +15m)',
      (v: string) => parseTime(v),
    )
    .option('--expires-at <time>', 'remove it from the edges at this time (ISO, or +7d)', (v: string) => parseTime(v))
    .addHelpText(
      'after',
      '\nExamples:\n  outpost data publish -f model.bin --name model --selector region=eu\n  outpost data publish -f model-v2.bin --name model --selector region=eu --activate-at 2026-12-01T02:00:00Z',
    )
    .action(async (o: PublishOptions, cmd: Command) => {
      let edgeSelector;
      try {
        edgeSelector = o.selector ? parseSelectorString(o.selector) : o.edges ? undefined : {};
      } catch (err) {
        throw new UsageError(`--selector: ${(err as Error).message}`);
      }
      const edges = o.edges ? o.edges.split(',').map((e) => e.trim()) : undefined;
      for (const e of edges ?? [])
        if (!isValidName(e))
          throw new UsageError(`--edges: invalid edge name "${e}": 1-63 lower-case letters, digits or "-"`);
      const s = await openSession(cmd, deps);
      let current: DataObject | undefined;
      try {
        current = await s.client.get<DataObject>(`/api/v1/projects/${s.project}/dataobjects/${o.name}`);
      } catch (err) {
        if (!(err instanceof HubError && err.status === 404)) throw err;
      }
      const blob = await pushBlob(s, o.file, DEFAULT_MEDIA_TYPE);
      const same = current?.spec.digest === blob.digest;
      const version = o.dataVersion ?? (same ? current!.spec.version : nextVersion(current?.spec.version));
      const object = {
        apiVersion: API_VERSION,
        kind: 'DataObject',
        metadata: { name: o.name, ...(current ? { labels: current.metadata.labels } : {}) },
        spec: {
          version,
          digest: blob.digest,
          size: blob.size,
          ...(o.path ? { path: o.path } : {}),
          ...(edgeSelector ? { edgeSelector } : {}),
          ...(edges ? { edges } : {}),
          ...(o.activateAt ? { activateAt: o.activateAt } : {}),
          ...(o.expiresAt ? { expiresAt: o.expiresAt } : {}),
        },
      };
      const r = await s.client.post<ApplyResponse>(
        '/api/v1/apply',
        { objects: [object] },
        { query: { project: s.project }, subject: { kind: 'object' } },
      );
      const action = r?.results?.[0]?.action ?? 'applied';
      line(
        s.out.out,
        `dataobject/${o.name} ${version} ${action} (${blob.digest}, ${formatSize(blob.size)}): \`outpost describe dataobject ${o.name}\` shows its delivery`,
      );
    });
  data
    .command('ls')
    .description('list the files an edge exported, with size, digest and when they arrived')
    .argument('<edge>', 'edge/NAME', parseEdgeRef)
    .argument('[workload]', 'only this workload', parseWorkload)
    .addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'yaml', 'json']).default('table'))
    .addHelpText('after', '\nExamples:\n  outpost data ls edge/shop-12\n  outpost data ls edge/shop-12 camera -o json')
    .action(async (edge: string, workload: string | undefined, o: { output: string }, cmd: Command) => {
      const s = await openSession(cmd, deps);
      const q = workload ? `?workload=${encodeURIComponent(workload)}` : '';
      const r = await s.client.get<{ items: DataFile[]; queue?: EgressQueue }>(
        `/api/v1/projects/${s.project}/edges/${encodeURIComponent(edge)}/data-files${q}`,
      );
      const items = r?.items ?? [];
      if (o.output === 'json') return void s.out.out.write(toJson(items));
      if (o.output === 'yaml') return void s.out.out.write(toYaml(items));
      // What has not arrived yet, from the edge's last heartbeat (all its workloads).
      if (r?.queue && r.queue.files > 0)
        line(
          s.out.err,
          `edge/${edge}: ${r.queue.files} more file(s), ${formatSize(r.queue.bytes)}, wait on the edge to be uploaded (as it said at ${r.queue.reportedAt})`,
        );
      if (items.length === 0)
        return line(s.out.err, `no exported files from edge/${edge}${workload ? ` workload ${workload}` : ''}`);
      s.out.out.write(
        formatTable(
          ['WORKLOAD', 'PATH', 'SIZE', 'DIGEST', 'MODIFIED', 'UPLOADED'],
          items.map((f) => [f.workload, f.path, formatSize(f.size), f.digest, f.modifiedAt, f.uploadedAt]),
        ),
      );
    });
  data
    .command('get')
    .description('download a file an edge exported (to stdout, or -o FILE)')
    .argument('<edge>', 'edge/NAME', parseEdgeRef)
    .argument('<workload>', 'the workload', parseWorkload)
    .argument('<path>', 'TARGET/relative/path as `outpost data ls` lists it', parsePath)
    .option('-o, --output <file>', 'write to this file (default: stdout)')
    .addHelpText('after', '\nExample:\n  outpost data get edge/shop-12 camera clips/0001.mp4 > 0001.mp4')
    .action(async (edge: string, workload: string, p: string, o: { output?: string }, cmd: Command) => {
      const s = await openSession(cmd, deps);
      if (!o.output && s.out.out.isTTY)
        throw new UsageError('refusing to write a file to a terminal: pass -o FILE or redirect stdout');
      const r = await s.client.get<{ items: DataFile[] }>(
        `/api/v1/projects/${s.project}/edges/${encodeURIComponent(edge)}/data-files?workload=${encodeURIComponent(workload)}&path=${encodeURIComponent(p)}`,
      );
      const f = r?.items[0];
      if (!f)
        throw new CliError(
          `edge/${edge} workload ${workload} has exported no file ${p}: see \`outpost data ls edge/${edge} ${workload}\``,
        );
      const tmp = o.output ? `${o.output}.part` : undefined;
      const out = tmp ? fs.createWriteStream(tmp) : (deps.stdout as unknown as NodeJS.WritableStream);
      try {
        await s.client.download(`/api/v1/projects/${s.project}/blobs/${f.digest}`, out);
      } catch (err) {
        if (tmp) fs.rmSync(tmp, { force: true });
        throw err;
      }
      if (tmp && o.output) fs.renameSync(tmp, o.output);
    });
}
