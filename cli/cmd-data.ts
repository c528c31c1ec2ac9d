/**
 * @module `outpost data ls|get`: the files edges' workloads exported (docs/data.md). A file's
 * bytes are a blob of the project, downloaded by its digest.
 */
import fs from 'node:fs';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { isExportPath, type DataFile } from '../core/data.js';
import { isValidName } from '../core/ids.js';
import { formatSize } from './cmd-blob.js';
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

export function registerDataCommands(program: Command, deps: CliDeps): void {
  const data = program.command('data').description("files the edges' workloads export to the hub (docs/data.md)");
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
      const r = await s.client.get<{ items: DataFile[] }>(
        `/api/v1/projects/${s.project}/edges/${encodeURIComponent(edge)}/data-files${q}`,
      );
      const items = r?.items ?? [];
      if (o.output === 'json') return void s.out.out.write(toJson(items));
      if (o.output === 'yaml') return void s.out.out.write(toYaml(items));
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
