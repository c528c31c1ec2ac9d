import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from './helpers.js';
import { processesUnder } from './leak-check.js';

describe('leak check', () => {
  const started: number[] = [];
  afterEach(() => {
    for (const pid of started.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  });

  it("the tests' temp dir is this run's own (TMPDIR set by the global setup)", () => {
    expect(path.basename(os.tmpdir())).toMatch(/^outpost-run-/);
  });

  it('finds a process by its working directory or an argument under the directory, and not once it is gone', async () => {
    const dir = tempDir();
    const other = tempDir();
    fs.writeFileSync(path.join(dir, 'x'), '');
    const byCwd = spawn('sleep', ['60'], { cwd: dir, stdio: 'ignore' });
    const byArg = spawn('tail', ['-f', path.join(dir, 'x')], { cwd: other, stdio: 'ignore' });
    started.push(byCwd.pid!, byArg.pid!);
    const found = await waitFor(
      () => {
        const pids = processesUnder(dir).map((p) => p.pid);
        return pids.includes(byCwd.pid!) && pids.includes(byArg.pid!) ? pids : null;
      },
      { what: 'both processes listed' },
    );
    expect(found).not.toContain(process.pid);
    expect(processesUnder(path.join(other, 'nothing-here')).map((p) => p.pid)).toEqual([]);
    byCwd.kill('SIGKILL');
    byArg.kill('SIGKILL');
    await waitFor(() => processesUnder(dir).length === 0, { what: 'the processes to be gone' });
    fs.rmSync(dir, { recursive: true });
    fs.rmSync(other, { recursive: true });
  });
});
