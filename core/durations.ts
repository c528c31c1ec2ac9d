/** @module Every timing constant of Outpost, each with the reason for its value. */
import type { GatherWindow } from './gather.js';

/**
 * How often the event-loop lag histogram of `/metrics` (prom-client's `*_eventloop_lag_*`) takes a
 * sample. prom-client's default, 10 ms, wakes an idle process 100 times a second: about 9 ms of CPU
 * a second on the 2-core machine of docs/benchmarks.md, the whole idle cost of a hub, and on an
 * edge a device that never sleeps. The hub samples every 100 ms (its operators watch its lag; a
 * stall of that order still shows), the agent every second.
 */
export const HUB_LAG_SAMPLE_MS = 100;
export const EDGE_LAG_SAMPLE_MS = 1_000;

/**
 * How often the edge agent looks whether a burst has left garbage to give back (edge/memory-reclaim.ts):
 * a read of V8's heap statistics, and a full collection only after the heap grew and settled.
 */
export const RECLAIM_CHECK_MS = 2_000;
/** How often an edge tells the hub it is alive. Ephemeral: never written into a document. */
export const HEARTBEAT_INTERVAL_MS = 10_000;
/** An edge is Offline after missing this many heartbeats; 3 tolerates one lost packet and a GC pause. */
export const OFFLINE_AFTER_MS = 3 * HEARTBEAT_INTERVAL_MS;
/** WebSocket ping interval; a peer that has not answered the previous ping by the next one is terminated. */
export const WS_PING_INTERVAL_MS = 15_000;
/** How long a client waits for the server's welcome before it gives up on that connection. */
export const HANDSHAKE_TIMEOUT_MS = 10_000;
/**
 * An upgrade request must be authenticated and given a handshake slot within this, or it is
 * answered 503 and closed: nothing an unanswered client does holds a socket on the hub. The edge
 * gives up on an upgrade after 2 * HANDSHAKE_TIMEOUT_MS itself (sync/client.ts).
 */
export const UPGRADE_DEADLINE_MS = 2 * HANDSHAKE_TIMEOUT_MS;
/**
 * Reconnects of one edge: a burst of RECONNECT_BURST, then one per RECONNECT_REFILL_MS (10 a
 * minute); more get 429 with Retry-After. An edge on a flapping link reconnects every 5 s at most
 * (RECONNECT_MAX_MS); a reconnect loop wrote ~440 event and connection rows a second.
 */
export const RECONNECT_BURST = 10;
export const RECONNECT_REFILL_MS = 6_000;
/** Refused upgrades (bad credentials, too many reconnects) are logged at most this often. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;
/**
 * Frames one edge connection may send: a burst of FRAME_BURST, then FRAMES_PER_SECOND. Past it
 * the hub stops reading that socket until the bucket refills (backpressure, not a disconnect):
 * 5.7 M heartbeats in 25 s were once accepted. 2,000 frames a second of 32 KiB tunnel data is
 * 64 MB/s, more than any edge link.
 */
export const FRAMES_PER_SECOND = 2_000;
export const FRAME_BURST = 4_000;
/** Reconnect backoff: first delay, cap, and the random share added so 10,000 edges do not return in lockstep. */
export const RECONNECT_MIN_MS = 500;
/**
 * 5 s, not more: after a hub restart the edges that dialled in vain during the outage come back
 * within this, instead of the fleet's tail idling in its backoff while the hub waits (measured in
 * docs/benchmarks.md, "Second round"). A refused TCP connect every 5 s per edge costs a down hub's
 * machine nothing; a busy hub spreads the edges itself with its upgrade line and Retry-After,
 * which the edge honours instead of its backoff.
 */
export const RECONNECT_MAX_MS = 5_000;
/** Pace of redials after a refusal a retry cannot fix soon (401, protocol version, decommissioned). */
export const RECONNECT_REFUSED_MS = 30_000;
export const RECONNECT_JITTER = 0.5;
/**
 * With several hub URLs (hub replicas): after a connection that was served ends, the agent dials
 * only that URL for this long before it tries the others. Its replica holds its documents: back
 * there after a restart it syncs nothing, where another replica writes its spec again and takes its
 * whole report (~3 KB an edge) at ~4 ms of its CPU. 10 s covers a replica's restart under load
 * (stopping 3,300 connections ~1 s, starting 1-4 s: with 5 s a restart of three replicas serving
 * 10,000 edges moved 39% of them, docs/benchmarks.md) and delays a real fail-over by that much
 * (goal: 30 s).
 */
export const HOME_REDIAL_MS = 10_000;
/**
 * While the replica that served an edge answers busy (503 or 429 with Retry-After), the edge keeps
 * dialling it as asked, up to this long after its connection ended (a restart of three replicas
 * serving 10,000 edges still moved 5-8% of them after HOME_REDIAL_MS, each refused by its busy
 * home); the dial it was told to make gets this much more before the edge moves on.
 */
export const HOME_BUSY_MAX_MS = 30_000;
export const HOME_BUSY_GRACE_MS = 1_000;
/** The edge reconciler runs on every change and also on this period, to repair drift nobody told it about. */
export const RECONCILE_PERIOD_MS = 5_000;
/**
 * A workload whose apply failed (a missing image, a command not found: the previous version keeps
 * running) is applied again this often: the cause may be fixed on site (an image loaded, a binary
 * installed) without any change from the hub. Pulls can take seconds each, so not more often.
 */
export const FAILED_RETRY_MS = 30_000;
/**
 * An apply that settles nothing (it threw, or the drift it put back comes back: something on site
 * keeps changing the objects) is tried again less and less often, the waits doubling from the
 * reconcile period up to this: a fight with a script or an operator on site, or a runtime that
 * refuses, does not restart a workload every 5 s for ever (edge/apply-pacing.ts).
 */
export const UNSETTLED_APPLY_MAX_MS = 5 * 60_000;
/** Status transitions of one workload are coalesced over this window so a crash loop cannot flood history. */
export const STATUS_COALESCE_MS = 1_000;
/** Hub-side debounce of summary recomputation after a burst of report changes. */
export const SUMMARY_DEBOUNCE_MS = 200;

/**
 * A join token made without --ttl expires after a day: long enough to enroll a batch of edges the
 * same day, short enough that one copied into a ticket or a chat is useless tomorrow.
 */
export const JOIN_TOKEN_DEFAULT_TTL_MS = 24 * 3_600_000;

export function backoffDelay(attempt: number, rand: () => number = Math.random): number {
  const base = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** Math.min(attempt, 16));
  return Math.round(base * (1 - RECONNECT_JITTER / 2 + rand() * RECONNECT_JITTER));
}

/** Parses `90s`, `15m`, `1h`, `7d` or a number of milliseconds. */
export function parseDuration(s: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(s.trim());
  if (!m) throw new Error(`invalid duration "${s}": use a number with a unit, e.g. 90s, 15m, 1h, 7d`);
  const n = Number(m[1]);
  const unit = m[2] ?? 'ms';
  const mult = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[unit]!;
  return Math.round(n * mult);
}

export function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? `${s % 60}s` : ''}`;
  if (s < 86400)
    return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60) ? `${Math.floor((s % 3600) / 60)}m` : ''}`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600) ? `${Math.floor((s % 86400) / 3600)}h` : ''}`;
}
/**
 * A workload image the hub could not resolve to a digest (its registry down, the tag unknown) is
 * asked again after this long; the edges wait meanwhile, named in the rollout's reason.
 */
export const IMAGE_RESOLVE_RETRY_MS = 30_000;
/**
 * A staged image no workload uses any more but a container still holds (the old version's pod on
 * its way out) is asked to go again after this long (edge/images/gc.ts).
 */
export const IMAGE_GC_RETRY_MS = 10_000;
/**
 * Hub replicas on one PostgreSQL (hub/replicas/): the replica session pings the server this often,
 * so a replica whose connection (and with it the leader's lock) is gone knows within a ping and
 * stops planning; a lost session is made again after REPLICA_RETRY_MS, and a message the database
 * refused is sent again after it.
 */
export const REPLICA_PING_MS = 2_000;
export const REPLICA_RETRY_MS = 1_000;
/**
 * How long a hub on PostgreSQL gathers before it sends (core/gather.ts `GatherPace`): writes whose
 * result nobody reads (status rows, digests: hub/state/pg/sync-client.ts `defer`), the replicas'
 * messages (hub/replicas/) and, on the leader, the edges whose status changed
 * (hub/scheduler/status-marks.ts). Each send is a round trip, and each message wakes every
 * replica: gathered over a few milliseconds, a fan-out's reports go in tens of sends instead of
 * hundreds (issue #22's CPU per edge). A lone write or message waits `minMs`; while they keep
 * coming, `maxMs`: a replica that serves a third of a fan-out sees its reports arrive a third as
 * fast, and at 10 ms its sends were three times as many as one hub's for the same fleet
 * (docs/benchmarks.md, issue #22, eighth session). Reads and transactions carry the writes waiting
 * anyway, so nothing a replica reads is older for it.
 */
export const PG_GATHER: GatherWindow = { minMs: 10, maxMs: 40 };

/**
 * On PostgreSQL, how long the hub gathers the edges' credential checks at the upgrade and their
 * hellos (hub/auth/edge-credentials.ts, sync/server.ts `gatherHellos`) to read and record them in
 * one round trip each (core/gather.ts): PG_GATHER's minimum for a lone edge, up to 75 ms while a storm
 * arrives, and no longer once 64 wait. Each batch costs both threads of the database client and the
 * database a request, whatever its size; measured on 1,000 edges (docs/benchmarks.md, issue #22):
 * one replica, 25 ms against 10 gave 6 % less hub CPU per edge; three replicas (each sees a third
 * of the storm) gained from the longer window in some pairs and not in others. Without the bound of
 * 64, a storm of 10,000 on one replica took a third longer (its handshakes held their admission
 * slots through the windows). The price: a handshake in a storm waits up to 2 x 75 ms more.
 */
export const PG_HANDSHAKE_GATHER: GatherWindow = { minMs: PG_GATHER.minMs, maxMs: 75, maxItems: 64 };
/**
 * How often each hub replica copies the image staging orders of the edges it serves from the table
 * into their documents (hub/images/staging.ts): the planning replica records them, the others poll.
 * The rollout waits for staging anyway (minutes of downloads); 2 s is noise against it.
 */
export const STAGING_COPY_MS = 2_000;
/**
 * A tunnel request forwarded to the hub replica that serves the edge (hub/tunnel/forward.ts) must
 * have its connection to that replica (TCP, and TLS: a live process answers the handshake) within
 * this, or the client gets 503 naming the replica: a replica that died refuses at once on most
 * networks, one whose host is gone never answers. Past the connection the tunnel's own deadlines
 * apply (a one-shot exec answers only when its command ends).
 */
export const FORWARD_CONNECT_TIMEOUT_MS = 5_000;
/**
 * A forwarded request's signature is accepted for this long after it was made (either way: the
 * replicas' clocks may differ a little); an older one is refused as a replay.
 */
export const FORWARD_SIGNATURE_MAX_AGE_MS = 60_000;
/**
 * The row of a hub replica that died (hub/state/replicas.ts) stays this long after it expired, so
 * an operator looking at `hub_replicas` after a crash still sees which replica it was; then the
 * next replica to start removes it (each start of a hub process adds a row).
 */
export const REPLICA_ROW_KEPT_MS = 24 * 3_600_000;
/**
 * A blob upload whose temporary file nobody wrote to for this long is abandoned and removed at
 * start (longer than any request body may take: REQUEST_BODY_TIMEOUT_MS in hub/http-server.ts is
 * 5 minutes). Hub replicas may share the blob directory: a younger file is another one's upload.
 */
export const ABANDONED_UPLOAD_MS = 15 * 60_000;
/**
 * Bytes an upload in progress holds against its project's blob quota are a row with an expiry
 * (hub/state/blobs.ts `blob_reservations`), renewed by the hub serving the upload: the rows of a
 * hub that died free their bytes within the TTL. Three renewals may be missed.
 */
export const BLOB_RESERVATION_RENEW_MS = 20_000;
export const BLOB_RESERVATION_TTL_MS = 3 * BLOB_RESERVATION_RENEW_MS;
/**
 * How often a hub reads again, in one statement, whether the tokens of its open long-lived requests
 * (event streams, log follows, exec sessions, proxied WebSockets, downloads: hub/auth/token-streams.ts)
 * are still valid. A revocation closes them at once (on another replica: the replicas' bus) and an
 * expiry at its time; this is the net under both, for a revocation whose message a replica did
 * not get. It is what the event stream's keep-alive check did every 15 s before.
 */
export const TOKEN_RECHECK_MS = 15_000;
/**
 * An edge agent left on trial by a switch that will not complete (edge/agent-lock.ts) is sent
 * SIGTERM, and SIGKILL if it still holds the data directory's lock this much later: its graceful
 * close takes a second or two; 10 s leaves room on a busy device and stays well inside the unit's
 * TimeoutStopSec (30 s), so a stop of the service waiting for it does not time out first.
 */
export const AGENT_LOCK_GRACE_MS = 10_000;
/** How long `outpost edge` waits for such an agent to let the lock go (after SIGKILL too) before it gives up. */
export const AGENT_LOCK_WAIT_MS = 30_000;
/**
 * How often the hub refreshes the session of a person signed in with the identity provider
 * (`--oidc-refresh-interval`, hub/auth/people.ts): at each refresh the provider is asked again for
 * the person's groups, and a person it no longer knows (or whose refresh it refuses) loses the
 * session. So a change at the provider takes effect within this bound; a change of a Project's
 * members takes effect at the next request.
 */
export const OIDC_REFRESH_MS = 5 * 60_000;
/** The longest a hub session of a person lasts, refreshed or not: then they sign in again. */
export const OIDC_SESSION_TTL_MS = 12 * 60 * 60_000;
/** How long a sign-in in progress (code flow, device flow) waits for the person. */
export const OIDC_SIGN_IN_TTL_MS = 10 * 60_000;
