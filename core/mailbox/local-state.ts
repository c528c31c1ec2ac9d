/**
 * @module The merge rule of local intents: what the intents given on an edge's site and not yet
 * cleared by the hub make of each workload over the hub's spec (`localState`: paused or not, the
 * overrides in force). It reads only the plain views of spec.ts and report.ts.
 */
import type { EdgeReportState, Intent } from './report.js';
import type { EdgeSpecState } from './spec.js';

export interface LocalState {
  paused: boolean;
  overrides: Record<string, unknown>;
  /** The intents still in force, oldest first (for `describe edge`). */
  intents: Intent[];
}

/**
 * The one deterministic rule that joins hub and site when both changed a workload while apart:
 * the hub's spec is the base; the site's intents that the hub has not cleared are folded over it
 * in sequence order (pause/resume toggle, override sets paths, clear drops earlier overrides and
 * the pause). So a site override wins on the paths it names and the hub wins everywhere else,
 * whichever side spoke first, until the hub clears the intents (`intentsCleared`). Both replicas
 * compute this from the same two documents, so they always agree.
 */
export function localState(
  report: EdgeReportState,
  spec: Pick<EdgeSpecState, 'intentsCleared'>,
): Record<string, LocalState> {
  const out: Record<string, LocalState> = {};
  for (const i of report.intents) {
    if (i.seq <= (spec.intentsCleared[i.workload] ?? 0)) continue;
    const st = (out[i.workload] ??= { paused: false, overrides: {}, intents: [] });
    switch (i.action) {
      case 'pause':
        st.paused = true;
        break;
      case 'resume':
        st.paused = false;
        break;
      case 'override':
        Object.assign(st.overrides, i.set ?? {});
        break;
      case 'clear':
        st.paused = false;
        st.overrides = {};
        st.intents = [];
        continue;
    }
    st.intents.push(i);
  }
  return out;
}
