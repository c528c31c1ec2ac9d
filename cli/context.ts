/**
 * @module What every operator command runs with: injectable I/O and clock (tests capture output
 * and pass a fake terminal), and the per-run session (hub client, project) resolved from flags,
 * environment and the config file.
 */
import os from 'node:os';
import readline from 'node:readline/promises';
import { InvalidArgumentError, type Command } from 'commander';
import { parseDuration } from '../core/durations.js';
import { isValidName } from '../core/ids.js';
import { HubClient } from './client.js';
import { resolveConnection } from './config.js';
import { line, type Output, type Writer } from './output.js';

export interface CliDeps {
  stdout: Writer;
  stderr: Writer;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  homedir: string;
  now(): number;
  sleep(ms: number): Promise<void>;
  /** Asks a yes/no question on the terminal; only called when stdin is a TTY. */
  confirm(question: string): Promise<boolean>;
}

export function defaultDeps(): CliDeps {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    homedir: os.homedir(),
    now: () => Date.now(),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    async confirm(question) {
      const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
      try {
        return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
      } finally {
        rl.close();
      }
    },
  };
}

export function outputOf(deps: CliDeps): Output {
  const color = !!deps.stdout.isTTY && !deps.env.NO_COLOR && deps.env.TERM !== 'dumb';
  return { out: deps.stdout, err: deps.stderr, color };
}

/** A flag's duration (30s, 5m, 1h), in ms; zero or a malformed one is a usage error naming the value. */
export function parsePositiveDuration(s: string): number {
  try {
    const ms = parseDuration(s);
    if (ms <= 0) throw new Error(`invalid duration "${s}": must be more than zero`);
    return ms;
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/** The `--project` flag's parser: a project is named like any object. */
export function parseProject(s: string): string {
  if (!isValidName(s))
    throw new InvalidArgumentError(
      `invalid project "${s}": use 1-63 lower-case letters, digits or "-" (use --all-projects for every project)`,
    );
  return s;
}

export interface Session {
  client: HubClient;
  /** The project of this run: --project, OUTPOST_PROJECT, the token's project, else `default`. */
  project: string;
  out: Output;
  deps: CliDeps;
}

/** Connects lazily: resolving may fetch the pinned CA or ask the hub who the token belongs to. */
export async function openSession(cmd: Command, deps: CliDeps): Promise<Session> {
  const { conn, project: stored, projectKnown } = await resolveConnection({ env: deps.env, homedir: deps.homedir });
  // With several hub URLs: which one answered when the first tried did not, on stderr.
  const client = new HubClient(conn, { onFailover: (note) => line(deps.stderr, note) });
  const flag = (cmd.optsWithGlobals() as { project?: string }).project;
  let project = flag ?? (deps.env.OUTPOST_PROJECT ? parseProject(deps.env.OUTPOST_PROJECT) : undefined) ?? stored;
  if (project === undefined && !projectKnown) {
    // A token from OUTPOST_TOKEN: its project is known only to the hub.
    const who = await client.get<{ project?: string }>('/api/v1/whoami');
    if (who?.project && who.project !== '*') project = who.project;
  }
  return { client, project: project ?? 'default', out: outputOf(deps), deps };
}

export function objectPath(project: string, kindPath: string, name?: string): string {
  const base = `/api/v1/projects/${encodeURIComponent(project)}/${kindPath}`;
  return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
}
