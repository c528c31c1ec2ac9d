/**
 * @module The images gate (a scheduler gate, hub/scheduler/gates.ts): an edge is not given a
 * placement's new version
 * - while an image of it is not resolved to a digest by the hub (hub/images/pins.ts), and
 * - with `rollout.prestage: true`, until the edge reports every pinned image of it present
 *   (staging.ts orders them; the edge fetches and loads them, edge/images/staging.ts).
 * The rollout names what each edge waits for (`images staged 1/3, 412 MB`, or why staging
 * stopped: over the budget, failed) and counts it as waiting; the edge keeps what it runs. An edge
 * over the budget also gets the placement an `OverBudget` event, once per version (staging.ts).
 */
import { parseByteSize } from '../../core/blobs.js';
import { imagesOf } from '../../core/images.js';
import { formatMB, STAGED_STATES, stagingImageSize, type StagingGroup } from '../../core/staging.js';
import type { EdgeGate } from '../scheduler/gates.js';
import type { HubStaging } from './staging.js';

export function imagesGate(staging: HubStaging): EdgeGate {
  return (placement, edges, ctx) => {
    const out = new Map<string, string[]>();
    const { project, name } = placement.metadata;
    const { prestage, prestageBudget } = placement.spec.rollout;
    const groups = new Map<string, StagingGroup>();
    for (const edge of edges) {
      const targets = ctx.targetsOn(edge);
      const unresolved = [...new Set(targets.flatMap((t) => t.unresolvedImages ?? []))];
      if (unresolved.length) {
        out.set(edge, unresolved);
        continue;
      }
      if (!prestage) continue;
      const images = [...new Set(targets.flatMap((t) => imagesOf(t.manifests)))]
        .map((i) => staging.describe(project, i))
        .filter((i) => i !== undefined);
      if (!images.length) continue;
      groups.set(edge, {
        placement: `${project}/${name}`,
        ...(prestageBudget ? { budgetBytes: parseByteSize(prestageBudget) } : {}),
        images,
      });
      const reported = staging.reported(edge);
      let staged = 0;
      let bytes = 0;
      const problems: string[] = [];
      let overBudget: string | undefined;
      for (const i of images) {
        const r = reported.get(i.image);
        if (r && STAGED_STATES.includes(r.state)) staged++;
        bytes += r?.state === 'Present' ? stagingImageSize(i) : (r?.done ?? 0);
        if (r?.state === 'OverBudget') overBudget ??= r.reason ?? 'over the placement prestageBudget';
        if (r && (r.state === 'OverBudget' || r.state === 'Failed') && r.reason)
          problems.push(`${r.state === 'OverBudget' ? 'over budget' : 'failed'}: ${r.reason}`);
      }
      if (overBudget) staging.noteOverBudget(project, name, edge, images, overBudget);
      if (staged < images.length)
        out.set(edge, [
          `images staged ${staged}/${images.length}, ${formatMB(bytes)}${problems.length ? ` (${[...new Set(problems)].join('; ')})` : ''}`,
        ]);
    }
    staging.setPlacement(`${project}/${name}`, groups);
    return out;
  };
}
