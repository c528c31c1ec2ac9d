/**
 * @module The podman secrets a play needs for env values from Secrets (plan.ts says why the driver
 * makes them in the JSON form): created just before `podman kube play`, labelled with the owner id
 * and the workload, and removed right after it. Play secrets live only during an apply; the
 * driver's start removes those an agent killed mid-apply left behind.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LABEL_OWNER, LABEL_WORKLOAD, secretName, type PlannedSecret } from './plan.js';
import type { PodmanContext } from './pods.js';

/** Creates the plan's secrets for `workload`, replacing any of the same name; `dir` holds their data file a moment. */
export async function createSecrets(
  ctx: PodmanContext,
  workload: string,
  secrets: PlannedSecret[],
  dir: string,
): Promise<void> {
  for (const s of secrets) {
    await ctx.podman.run(['secret', 'rm', s.name]);
    // `secret create NAME -` insists on a FIFO for stdin and Node's pipes are socket pairs: use a file.
    const dataFile = join(dir, `${s.name}.json`);
    await writeFile(dataFile, s.data, { mode: 0o600 });
    try {
      await ctx.podman.ok(
        [
          'secret',
          'create',
          '--label',
          `${LABEL_OWNER}=${ctx.owner}`,
          '--label',
          `${LABEL_WORKLOAD}=${workload}`,
          s.name,
          dataFile,
        ],
        `creating podman secret ${s.name}`,
      );
    } finally {
      await rm(dataFile, { force: true });
    }
  }
}

/** Removes the play secrets of `workload`, or of every workload of this owner. */
export async function removeSecrets(ctx: PodmanContext, workload?: string): Promise<void> {
  // podman 4.3 cannot filter secrets by label ("invalid filter"): narrow by our name prefix,
  // then check each one's labels before removing it.
  const prefix = workload ? secretName(ctx.owner, workload, '') : `outpost.${ctx.owner}.`;
  const names = (await ctx.podman.ok(['secret', 'ls', '--format', '{{.Name}}'], 'listing podman secrets')).split('\n');
  const ids = names.filter((n) => n.startsWith(prefix));
  if (ids.length === 0) return;
  const specs = JSON.parse(await ctx.podman.ok(['secret', 'inspect', ...ids], 'inspecting secrets')) as {
    ID: string;
    Spec?: { Labels?: Record<string, string> | null };
  }[];
  const ours = specs
    .filter(
      (s) =>
        s.Spec?.Labels?.[LABEL_OWNER] === ctx.owner && (!workload || s.Spec?.Labels?.[LABEL_WORKLOAD] === workload),
    )
    .map((s) => s.ID);
  if (ours.length) await ctx.podman.ok(['secret', 'rm', ...ours], 'removing podman secrets');
}
