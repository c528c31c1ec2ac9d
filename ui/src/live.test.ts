/** The live feed against a real HTTP server speaking server-sent events, as the hub does. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers.js';
import { LiveFeed, parseSse, type LinkState } from './live.js';

describe('parseSse', () => {
  it('splits complete events, keeps an incomplete one for later, skips comments, joins data lines', () => {
    const r = parseSse('event: hello\ndata: {"a":1}\n\n: keepalive\n\nevent: change\ndata: x\ndata: y\n\nevent: cha');
    expect(r.events).toEqual([
      { event: 'hello', data: '{"a":1}' },
      { event: 'change', data: 'x\ny' },
    ]);
    expect(r.rest).toBe('event: cha');
    expect(parseSse(r.rest + 'nge\ndata: z\n\n').events).toEqual([{ event: 'change', data: 'z' }]);
  });

  it('accepts CRLF line ends and data without a space after the colon', () => {
    expect(parseSse('data:plain\r\n\r\n').events).toEqual([{ event: 'message', data: 'plain' }]);
  });
});

describe('LiveFeed', () => {
  const servers: http.Server[] = [];
  const feeds: LiveFeed[] = [];
  afterEach(async () => {
    for (const f of feeds.splice(0)) f.stop();
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  function serve(handler: http.RequestListener): Promise<string> {
    const s = http.createServer(handler);
    servers.push(s);
    return new Promise((resolve) =>
      s.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(s.address() as AddressInfo).port}/stream`)),
    );
  }

  it('sends the token in a header, reports live, passes change events on, and after a break reconnects and asks for one refetch', async () => {
    const auth: (string | undefined)[] = [];
    const open: http.ServerResponse[] = [];
    const url = await serve((req, res) => {
      auth.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: hello\ndata: {"keepaliveMs":15000}\n\n');
      open.push(res);
    });
    const states: LinkState[] = [];
    const changes: string[][] = [];
    const feed = new LiveFeed({
      url,
      token: 'T0K',
      onChange: (t) => changes.push(t),
      onState: (s) => states.push(s),
      retryMinMs: 20,
      retryMaxMs: 50,
    });
    feeds.push(feed);
    feed.start();
    await waitFor(() => feed.state === 'live', { what: 'live' });
    expect(auth).toEqual(['Bearer T0K']);
    open[0].write('event: change\ndata: {"topics":["objects","status"]}\n\n');
    await waitFor(() => changes.length === 1, { what: 'change event' });
    expect(changes[0]).toEqual(['objects', 'status']);

    open[0].destroy(); // the hub goes away mid-stream
    await waitFor(() => states.includes('lost'), { what: 'lost' });
    await waitFor(() => feed.state === 'live' && open.length === 2, { what: 'reconnected' });
    expect(changes[changes.length - 1]).toEqual(['reconnected']);
    expect(states).toEqual(['connecting', 'live', 'lost', 'live']);
  });

  it('stays lost with growing delays while the hub is down, and tells the shell when the token is refused', async () => {
    const states: LinkState[] = [];
    const feed = new LiveFeed({
      url: 'http://127.0.0.1:9/stream',
      token: 't',
      onChange: () => {},
      onState: (s) => states.push(s),
      retryMinMs: 10,
      retryMaxMs: 40,
    });
    feeds.push(feed);
    feed.start();
    await waitFor(() => states.filter((s) => s === 'lost').length >= 3, { what: 'retries' });
    expect(feed.retryAt).toBeGreaterThan(Date.now() - 1000);
    feed.stop();

    let refused = 0;
    const url = await serve((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end('{"error":{"code":"unauthorized","message":"no"}}');
    });
    const f2 = new LiveFeed({
      url,
      token: 'bad',
      onChange: () => {},
      onState: () => {},
      onUnauthorized: () => refused++,
    });
    feeds.push(f2);
    f2.start();
    await waitFor(() => refused === 1, { what: 'unauthorized' });
  });
});
