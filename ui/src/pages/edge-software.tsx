/**
 * What runs on an edge besides its workloads, on the edge detail page: the agent releases it
 * switched to (committed or rolled back, when, ordered by which AgentUpgrade, and why: a rollback
 * reason ends with the last lines the new binary wrote on stderr), and the images it staged for a
 * rollout. Both as the edge last reported them (core/api/views.ts EdgeStatusView).
 */
import { enc } from '../api.js';
import { Badge } from '../components/badge.js';
import { Link } from '../components/link.js';
import { ago, bytes, dateTime } from '../format.js';
import type { EdgeStatus } from '../types.js';

type AgentRelease = NonNullable<NonNullable<EdgeStatus['inventory']>['agentRelease']>;

/** A switch's state in the words the CLI and the AgentUpgrade page use. */
const releaseWord = (state: AgentRelease['state']): string =>
  state === 'rolled-back' ? 'RolledBack' : state === 'committed' ? 'Committed' : 'Switching';

export function AgentReleases(props: { release: AgentRelease | undefined; version: string | undefined }) {
  const r = props.release;
  const history = r?.history ?? [];
  return (
    <section aria-labelledby="releases-h">
      <h2 id="releases-h">Agent releases</h2>
      {!r && (
        <p class="muted">
          Runs {props.version ?? 'the binary it was installed with'}; it never switched to another release.
        </p>
      )}
      {r?.state === 'trial' && (
        <p>
          <Badge value="Switching" /> to {r.version} from {r.previousVersion} since {dateTime(r.at)}: the new binary is
          on trial.
        </p>
      )}
      {history.length > 0 && (
        <div class="table-wrap">
          <table class="table compact">
            <caption>Switches that ended, newest first (times on the edge's clock)</caption>
            <thead>
              <tr>
                <th scope="col">Ended</th>
                <th scope="col">Release</th>
                <th scope="col">From</th>
                <th scope="col">Result</th>
                <th scope="col">Ordered by</th>
                <th scope="col">Why</th>
              </tr>
            </thead>
            <tbody>
              {history.map((h, i) => (
                <tr key={`${h.at}-${i}`}>
                  <td>
                    <time dateTime={h.at} title={`started ${dateTime(h.startedAt)}`}>
                      {dateTime(h.at)} ({ago(h.at)})
                    </time>
                  </td>
                  <th scope="row">{h.version}</th>
                  <td>{h.previousVersion}</td>
                  <td>
                    <Badge value={releaseWord(h.state)} />
                  </td>
                  <td>
                    {h.upgrade ? (
                      <Link href={`/agentupgrades/${enc(h.upgrade)}`}>{h.upgrade}</Link>
                    ) : (
                      <span title="outpost edge local upgrade">on site</span>
                    )}
                  </td>
                  <td class="reason-cell">{h.reason ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

export function StagedImages(props: { staging: EdgeStatus['imageStaging'] }) {
  const st = props.staging;
  if (!st?.images.length) return null;
  return (
    <section aria-labelledby="staged-h">
      <h2 id="staged-h">Staged images</h2>
      <p class="muted">
        For a rollout with prestage on: {st.summary}. The edge keeps what it runs until every image is staged.
      </p>
      <div class="table-wrap">
        <table class="table compact">
          <thead>
            <tr>
              <th scope="col">Image</th>
              <th scope="col">State</th>
              <th scope="col">Size</th>
              <th scope="col">Fetched</th>
              <th scope="col">Why</th>
            </tr>
          </thead>
          <tbody>
            {st.images.map((i) => (
              <tr key={i.image}>
                <th scope="row">
                  <code>{i.image}</code>
                </th>
                <td>
                  <Badge value={i.state} />
                </td>
                <td>{bytes(i.size)}</td>
                <td>{bytes(i.done)}</td>
                <td>{i.reason ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
