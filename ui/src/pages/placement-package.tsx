/**
 * What a placement page adds for a package placement and a pre-staged rollout: the package as
 * asked (`web@^1.0`, its profile) and the version the hub resolved it to (docs/catalog.md), and
 * `prestage` with its budget and the staging progress over the edges not switched yet, with the
 * edges over the budget or failed and why (docs/drivers.md, "Pre-staging").
 */
import { enc } from '../api.js';
import { Link } from '../components/link.js';
import { ago } from '../format.js';
import type { PlacementObj } from '../types.js';

/** `dt`/`dd` pairs for the placement's facts list: the package, resolved. */
export function PackageFacts(props: { placement: PlacementObj }) {
  const ref = props.placement.spec.package;
  if (!ref) return null;
  const d = props.placement.status.package;
  return (
    <>
      <dt>Package</dt>
      <dd data-testid="placement-package">
        <Link href={`/catalog?package=${enc(ref.name)}`}>
          <code>
            {ref.name}@{ref.version}
          </code>
        </Link>
        {d ? (
          <>
            {' '}
            → <strong>{d.version}</strong>
            {(d.profile ?? ref.profile) && <>, profile {d.profile ?? ref.profile}</>}{' '}
            <span class="muted">
              (resolved {ago(d.resolvedAt)}
              {d.previousVersion ? `, was ${d.previousVersion}` : ''})
            </span>
          </>
        ) : (
          <span class="muted"> not resolved yet</span>
        )}
      </dd>
    </>
  );
}

/** `prestage on, budget 500MB per edge` for the rollout settings. */
export function prestageText(rollout: PlacementObj['spec']['rollout']): string {
  if (!rollout.prestage) return 'prestage off';
  return `prestage on, ${rollout.prestageBudget ? `budget ${rollout.prestageBudget} per edge` : 'no budget'}`;
}

/** The staging of the new version's images, while a prestaged rollout stages them. */
export function PrestageSection(props: { placement: PlacementObj }) {
  const { rollout } = props.placement.spec;
  const s = props.placement.status.imageStaging;
  if (!rollout.prestage && !s) return null;
  const pct = s && s.totalBytes > 0 ? Math.round((s.bytes / s.totalBytes) * 100) : 0;
  // The bar counts edges ready to switch (bytes moved are in the text): an edge whose driver pulls
  // at update time (Skipped) is ready with no byte moved.
  const edgePct = s && s.edges > 0 ? Math.round((s.staged / s.edges) * 100) : 0;
  return (
    <section aria-labelledby="prestage-h">
      <h2 id="prestage-h">Image pre-staging</h2>
      <p>
        {prestageText(rollout)}: each edge fetches the new version's images over its own connection and switches only
        once it has them all.
      </p>
      {s ? (
        <>
          <div
            class={`bar ${s.staged === s.edges ? 'bar-full' : ''} ${s.overBudget + s.failed > 0 ? 'bar-bad' : ''}`}
            role="progressbar"
            aria-label={`image staging: ${s.staged} of ${s.edges} edges staged`}
            aria-valuemin={0}
            aria-valuemax={s.edges}
            aria-valuenow={s.staged}
            aria-valuetext={s.summary}
          >
            <div class="bar-fill" style={{ width: `${edgePct}%` }} />
          </div>
          <p data-testid="staging-summary">
            {s.summary}
            {s.totalBytes > 0 && <span class="muted"> ({pct}% of the bytes)</span>}
          </p>
          {s.problems.length > 0 && (
            <ul class="problems" aria-label="edges whose staging stopped">
              {s.problems.map((p) => (
                <li key={p.edge}>
                  <Link href={`/edges/${enc(p.edge)}`}>{p.edge}</Link>{' '}
                  <strong>{p.state === 'OverBudget' ? 'over budget' : 'failed'}</strong>: {p.reason}
                </li>
              ))}
              {s.overBudget + s.failed > s.problems.length && (
                <li class="muted">and {s.overBudget + s.failed - s.problems.length} more</li>
              )}
            </ul>
          )}
        </>
      ) : (
        <p class="muted">Nothing is staging: no edge waits for the new version's images.</p>
      )}
    </section>
  );
}
