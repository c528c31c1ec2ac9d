/**
 * @module Results: one JSON file per scenario and day (`bench/results/<scenario>-<YYYY-MM-DD>.json`)
 * holding the latest run per fleet size, and the summary table printed after a run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './hub-process.js';
import { machineInfo, type MachineInfo } from './sys.js';

export const RESULTS_DIR = path.join(ROOT, 'bench/results');

export interface Target {
  what: string;
  target: string;
  value: string;
  /** undefined: reported only, or not measured in this run. */
  met?: boolean;
}

export interface RunResult {
  scenario: string;
  parameters: Record<string, unknown>;
  startedAt: string;
  durationMs: number;
  /** False when the run stopped early (time budget, failure); metrics then hold what was measured. */
  completed: boolean;
  error?: string;
  metrics: Record<string, unknown>;
  targets: Target[];
  /** Where the time went, and whether the simulator rather than the hub limited the run. */
  bottleneck: string[];
}

export interface ResultFile {
  scenario: string;
  date: string;
  machine: MachineInfo;
  command: string;
  runs: RunResult[];
}

export function today(): string {
  return new Date().toISOString().slice(0, 10);
}

/** Writes (or updates) the day's file of the scenario; a run replaces an earlier one of the same size. */
export function writeResult(run: RunResult, dir = RESULTS_DIR, command = 'npm run bench'): string {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${run.scenario}-${today()}.json`);
  let data: ResultFile = { scenario: run.scenario, date: today(), machine: machineInfo(), command, runs: [] };
  try {
    const old = JSON.parse(fs.readFileSync(file, 'utf8')) as ResultFile;
    if (old.scenario === run.scenario && Array.isArray(old.runs)) data = { ...old, machine: machineInfo() };
  } catch {
    /* first run of the day */
  }
  data.runs = data.runs.filter((r) => r.parameters.edges !== run.parameters.edges);
  data.runs.push(run);
  data.runs.sort((a, b) => Number(a.parameters.edges) - Number(b.parameters.edges));
  data.command = command;
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(data, null, 2)}\n`);
  fs.renameSync(tmp, file);
  return file;
}

function pad(s: string, n: number): string {
  return s.length >= n ? s : s + ' '.repeat(n - s.length);
}

/** A plain-text table: scenario, N, each target with its value and met/missed. */
export function formatTable(runs: RunResult[]): string {
  const rows: string[][] = [['scenario', 'edges', 'measure', 'value', 'target', 'verdict']];
  for (const r of runs) {
    const n = String(r.parameters.edges ?? '-');
    if (!r.completed)
      rows.push([r.scenario, n, 'run', `stopped early: ${r.error ?? 'unknown'}`.slice(0, 90), '', 'incomplete']);
    for (const t of r.targets)
      rows.push([
        r.scenario,
        n,
        t.what,
        t.value,
        t.target,
        t.met === undefined ? 'reported' : t.met ? 'met' : 'MISSED',
      ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  return rows
    .map(
      (row, j) =>
        row.map((c, i) => pad(c, widths[i])).join('  ') +
        (j === 0 ? `\n${widths.map((w) => '-'.repeat(w)).join('  ')}` : ''),
    )
    .join('\n');
}

export const kb = (b: number | undefined): string => (b === undefined ? '-' : `${(b / 1024).toFixed(1)} KB`);
export const mb = (b: number | undefined): string => (b === undefined ? '-' : `${(b / 1024 ** 2).toFixed(1)} MB`);
export const sec = (ms: number | undefined): string => (ms === undefined ? '-' : `${(ms / 1000).toFixed(2)} s`);
export const msf = (ms: number | undefined): string => (ms === undefined ? '-' : `${Math.round(ms)} ms`);
