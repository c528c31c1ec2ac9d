// The flags of `outpost hub` and `outpost edge` that take a value: a bad one exits 2 before anything
// starts, naming the flag, the value and what a good one looks like.
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAIN } from '../test/procs.js';

function outpost(args: string[]) {
  const data = path.join(os.tmpdir(), `outpost-flags-${process.pid}-never-created`);
  return spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args, '--data', data], {
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('value flags of hub and edge', () => {
  it('edge --labels with a bad key', () => {
    const r = outpost(['edge', '--hub', 'https://127.0.0.1:9', '--labels', 'Bad Key=1']);
    expect(r.stderr).toMatch(
      /option '--labels <k=v,...>' argument 'Bad Key=1' is invalid\. invalid label key "Bad Key"/,
    );
    expect(r.status).toBe(2);
  });

  it('hub --blob-quota with a unit that does not exist', () => {
    const r = outpost(['hub', '--blob-quota', '12QB']);
    expect(r.stderr).toMatch(
      /option '--blob-quota <size>' argument '12QB' is invalid\. invalid size "12QB": .*e\.g\. 500MB/,
    );
    expect(r.status).toBe(2);
  });

  it('hub --blob-idle-timeout that is not a duration, or zero', () => {
    const r = outpost(['hub', '--blob-idle-timeout', 'soon']);
    expect(r.stderr).toMatch(
      /option '--blob-idle-timeout <duration>' argument 'soon' is invalid\. invalid duration "soon": use a number with a unit, e\.g\. 90s/,
    );
    expect(r.status).toBe(2);
    expect(outpost(['hub', '--blob-idle-timeout', '0s']).stderr).toMatch(/"0s" is not a positive duration/);
  });

  it('hub --max-connections-per-address that is not a positive integer', () => {
    const r = outpost(['hub', '--max-connections-per-address', '0']);
    expect(r.stderr).toMatch(
      /option '--max-connections-per-address <n>' argument '0' is invalid\. "0" is not a positive integer/,
    );
    expect(r.status).toBe(2);
  });
});
