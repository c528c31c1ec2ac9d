/**
 * @module What can be checked about a new version before the running one is stopped: each
 * process's command exists and is executable (found on its PATH when it has no slash), and an
 * explicit workingDir is a directory. A version that fails these would leave the edge with nothing
 * running; the driver keeps the old version instead and reports the failure (index.ts `apply`).
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import type { WorkloadPlan } from './plan.js';

async function executable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

/** Why the plan's processes cannot start here, or undefined when every check passes. */
export async function preflight(plan: WorkloadPlan, defaultWorkingDir: string): Promise<string | undefined> {
  const problems: string[] = [];
  for (const p of plan.processes) {
    const cmd = p.argv[0];
    if (p.workingDir !== defaultWorkingDir) {
      const st = await stat(p.workingDir).catch(() => null);
      if (!st?.isDirectory()) {
        problems.push(
          `${p.key}: workingDir ${p.workingDir} does not exist; create it on the device or change workingDir`,
        );
        continue;
      }
    }
    if (cmd.includes('/')) {
      const file = isAbsolute(cmd) ? cmd : join(p.workingDir, cmd);
      if (!(await executable(file)))
        problems.push(`${p.key}: command ${cmd} does not exist or is not executable; fix command or install it`);
      continue;
    }
    const path = (p.env.PATH ?? '').split(':').filter(Boolean);
    let found = false;
    for (const dir of path) if ((found = await executable(join(dir, cmd)))) break;
    if (!found)
      problems.push(`${p.key}: command ${cmd} is not found on PATH=${p.env.PATH ?? ''}; fix command or install it`);
  }
  return problems.length ? problems.join('; ') : undefined;
}
