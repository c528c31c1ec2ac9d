/** Fleet overview: edge counts, placements with READY x/y, edges online over time, latest events. */
import { useState } from 'preact/hooks';
import { eventsQuery } from '../../../core/api/views.js';
import { enc, query } from '../api.js';
import { Badge } from '../components/badge.js';
import { OnlineChart } from '../components/chart.js';
import { ErrorBox } from '../components/error-box.js';
import { Link } from '../components/link.js';
import { ReadyBar } from '../components/ready-bar.js';
import { ago } from '../format.js';
import { useGet } from '../hooks.js';
import { useApp } from '../store.js';
import type { Fleet, HubEvent, List, OnlineHistory, PlacementObj } from '../types.js';

const SPANS = [1, 6, 24, 168];

function Count(props: { label: string; value?: number; href: string; tone: string }) {
  return (
    <Link href={props.href} class={`count tone-${props.tone}`}>
      <span class="count-value">{props.value ?? '—'}</span>
      <span class="count-label">{props.label}</span>
    </Link>
  );
}

/** Where an event's object is shown, for the kinds that have a page. */
const OBJECT_PAGES: Record<string, string> = {
  Edge: '/edges',
  Workload: '/workloads',
  Placement: '/placements',
  AgentUpgrade: '/agentupgrades',
  DataObject: '/dataobjects',
  Cluster: '/clusters',
};

/**
 * The latest events of the project, or of one object (`kind` and `name`): an edge's with those of
 * other objects about it (core/api/views.ts eventsQuery), each naming its kind.
 */
export function Events(props: { project: string; kind?: string; name?: string; limit?: number; title?: string }) {
  const of = props.kind && props.name ? eventsQuery(props.kind, props.name) : {};
  const ev = useGet<List<HubEvent>>(
    `/api/v1/projects/${enc(props.project)}/events${query({ ...of, limit: props.limit ?? 12 })}`,
  );
  const own = (e: HubEvent) => e.kind === props.kind && e.name === props.name;
  return (
    <section aria-labelledby="events-h">
      <h2 id="events-h">{props.title ?? 'Latest events'}</h2>
      <ErrorBox error={ev.error} />
      {ev.data && ev.data.items.length === 0 && <p class="muted">No events yet.</p>}
      <ol class="events">
        {ev.data?.items.map((e) => (
          <li key={e.id}>
            <time dateTime={e.time} title={e.time}>
              {ago(e.time)}
            </time>
            <span class="event-reason">{e.reason}</span>
            <span class="event-msg">
              {props.kind && !own(e) && <span class="muted">{e.kind} </span>}
              {e.gone ? (
                <span title={`this ${e.kind.toLowerCase()} no longer exists`}>
                  {e.name} <span class="muted">({e.kind === 'Edge' ? 'decommissioned' : 'deleted'})</span>
                </span>
              ) : OBJECT_PAGES[e.kind] ? (
                <Link href={`${OBJECT_PAGES[e.kind]}/${enc(e.name)}`}>{e.name}</Link>
              ) : (
                e.name
              )}
              {': '}
              {e.message}
            </span>
          </li>
        ))}
      </ol>
    </section>
  );
}

export function Overview() {
  const project = useApp().session!.project;
  const p = enc(project);
  const [hours, setHours] = useState(6);
  const fleet = useGet<Fleet>(`/api/v1/projects/${p}/fleet`);
  // History moves slowly and costs a scan of the connections table: the periodic refresh is enough.
  const history = useGet<OnlineHistory>(`/api/v1/projects/${p}/edges-online?hours=${hours}`, { live: false });
  const placements = useGet<List<PlacementObj>>(`/api/v1/projects/${p}/placements?limit=50`);
  const e = fleet.data?.edges;
  return (
    <>
      <h1>Fleet overview</h1>
      <ErrorBox error={fleet.error} />
      <section aria-label="Edges by state" class="counts">
        <Count label="edges online" value={e?.Online} href="/edges?state=Online" tone="ok" />
        <Count label="offline" value={e?.Offline} href="/edges?state=Offline" tone={e?.Offline ? 'warn' : 'muted'} />
        <Count
          label="pending approval"
          value={e?.Pending}
          href="/edges?state=Pending"
          tone={e?.Pending ? 'info' : 'muted'}
        />
        <Count label="edges in total" value={e?.total} href="/edges" tone="muted" />
      </section>

      <div class="grid2">
        <section aria-labelledby="placements-h">
          <h2 id="placements-h">Placements</h2>
          <ErrorBox error={placements.error} />
          {placements.data && placements.data.items.length === 0 && (
            <p class="muted">
              No placements yet. <Link href="/apply">Apply a workload and a placement</Link>.
            </p>
          )}
          <ul class="placement-cards">
            {placements.data?.items.map((pl) => (
              <li key={pl.metadata.name} class="card">
                <div class="card-head">
                  <Link href={`/placements/${enc(pl.metadata.name)}`}>{pl.metadata.name}</Link>
                  {pl.status.rollout && (
                    <Badge
                      value={pl.status.rollout.paused ? 'Paused' : pl.status.rollout.phase}
                      title={pl.status.rollout.reason}
                    />
                  )}
                </div>
                <ReadyBar summary={pl.status.summary} label={`placement ${pl.metadata.name}`} />
              </li>
            ))}
          </ul>
          {placements.data?.continue && (
            <p>
              <Link href="/placements">All placements →</Link>
            </p>
          )}
        </section>

        <section aria-labelledby="chart-h">
          <div class="section-head">
            <h2 id="chart-h">Edges online</h2>
            <div class="segmented" role="group" aria-label="Time span">
              {SPANS.map((h) => (
                <button key={h} type="button" class="btn small" aria-pressed={hours === h} onClick={() => setHours(h)}>
                  {h < 24 ? `${h} h` : `${h / 24} d`}
                </button>
              ))}
            </div>
          </div>
          <ErrorBox error={history.error} />
          {history.data && <OnlineChart points={history.data.points} total={e?.total ?? 0} hours={hours} />}
        </section>
      </div>

      <Events project={project} />
    </>
  );
}
