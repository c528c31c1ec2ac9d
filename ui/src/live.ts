/**
 * Live updates: reads the hub's server-sent-events stream (`/api/v1/projects/P/stream`) with
 * fetch, so the bearer token goes in a header and never into a URL (EventSource cannot set
 * headers). Each `change` event bumps a counter the pages refetch on. The connection state drives
 * the "connection lost" banner: the stream breaking, or staying silent past two keep-alives, means
 * the hub is unreachable; the feed then retries with backoff.
 */

export interface SseEvent {
  event: string;
  data: string;
}

/** Parses complete events out of `buffer`; returns them and the unparsed rest (an incomplete event). */
export function parseSse(buffer: string): { events: SseEvent[]; rest: string } {
  const events: SseEvent[] = [];
  const text = buffer.replace(/\r\n?/g, '\n');
  let start = 0;
  for (;;) {
    const end = text.indexOf('\n\n', start);
    if (end < 0) break;
    const block = text.slice(start, end);
    start = end + 2;
    let event = 'message';
    const data: string[] = [];
    let any = false;
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else continue;
      any = true;
    }
    if (any) events.push({ event, data: data.join('\n') });
  }
  return { events, rest: text.slice(start) };
}

export type LinkState = 'connecting' | 'live' | 'lost';

export interface LiveFeedOptions {
  url: string;
  token: string;
  onChange(topics: string[]): void;
  onState(state: LinkState, detail?: string): void;
  onUnauthorized?(): void;
  /** Retry delays grow from min to max. */
  retryMinMs?: number;
  retryMaxMs?: number;
  fetch?: typeof fetch;
}

export class LiveFeed {
  private abort: AbortController | undefined;
  private stopped = false;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private watchdog: ReturnType<typeof setTimeout> | undefined;
  private silenceMs = 40_000;
  state: LinkState = 'connecting';
  /** When the next retry happens, while lost. */
  retryAt: number | undefined;

  constructor(private readonly o: LiveFeedOptions) {}

  start(): void {
    this.stopped = false;
    void this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.watchdog);
    this.abort?.abort();
  }

  /** Try again now (the banner's "Retry now" button). */
  retryNow(): void {
    if (this.stopped || this.state === 'live') return;
    clearTimeout(this.retryTimer);
    this.abort?.abort();
    void this.connect();
  }

  private setState(s: LinkState, detail?: string): void {
    this.state = s;
    this.o.onState(s, detail);
  }

  private armWatchdog(): void {
    clearTimeout(this.watchdog);
    this.watchdog = setTimeout(() => this.abort?.abort(new Error('no data from the hub for too long')), this.silenceMs);
  }

  private async connect(): Promise<void> {
    const ac = new AbortController();
    this.abort = ac;
    if (this.state !== 'lost') this.setState('connecting');
    let reason = 'the hub closed the live-update stream';
    try {
      const res = await (this.o.fetch ?? fetch)(this.o.url, {
        headers: { authorization: `Bearer ${this.o.token}`, accept: 'text/event-stream' },
        signal: ac.signal,
      });
      if (res.status === 401) {
        this.o.onUnauthorized?.();
        return;
      }
      if (!res.ok || !res.body) throw new Error(`the hub answered ${res.status} to the live-update stream`);
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buf = '';
      this.armWatchdog();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        this.armWatchdog();
        const parsed = parseSse(buf + decoder.decode(value, { stream: true }));
        buf = parsed.rest;
        for (const ev of parsed.events) this.handle(ev);
      }
    } catch (err) {
      if (this.stopped) return;
      reason = (err as Error).message || reason;
    } finally {
      clearTimeout(this.watchdog);
    }
    if (this.stopped || ac !== this.abort) return;
    this.scheduleRetry(reason);
  }

  private handle(ev: SseEvent): void {
    if (ev.event === 'hello') {
      try {
        const h = JSON.parse(ev.data) as { keepaliveMs?: number };
        if (h.keepaliveMs) this.silenceMs = h.keepaliveMs * 2 + 5_000;
      } catch {
        /* an older hub: keep the default */
      }
      const wasLost = this.state === 'lost';
      this.attempt = 0;
      this.retryAt = undefined;
      this.setState('live');
      // Whatever changed while we were away: refetch once.
      if (wasLost) this.o.onChange(['reconnected']);
    } else if (ev.event === 'change') {
      let topics: string[] = [];
      try {
        topics = (JSON.parse(ev.data) as { topics?: string[] }).topics ?? [];
      } catch {
        /* a change without topics is still a change */
      }
      this.o.onChange(topics);
    } else if (ev.event === 'unauthorized') {
      this.stop();
      this.o.onUnauthorized?.();
    }
  }

  private scheduleRetry(reason: string): void {
    const min = this.o.retryMinMs ?? 1_000;
    const max = this.o.retryMaxMs ?? 15_000;
    const delay = Math.min(max, min * 2 ** this.attempt++);
    this.retryAt = Date.now() + delay;
    this.setState('lost', reason);
    this.retryTimer = setTimeout(() => void this.connect(), delay);
  }
}
