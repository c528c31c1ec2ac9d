/**
 * @module Test helper for the sync tests: a real SyncServer listening on 127.0.0.1 over a real
 * HTTP server (404 for anything but the sync upgrade), with its ws:// URL and an awaited close.
 */
import http from 'node:http';
import { SyncServer, type SyncServerOptions } from './server.js';

export interface ListeningSyncServer {
  server: SyncServer;
  http: http.Server;
  port: number;
  /** ws://127.0.0.1:PORT/api/v1/sync */
  url: string;
  /** Closes the sync server (its connections) and then the HTTP server. */
  close(): Promise<void>;
}

/** Starts `new SyncServer(opts)` on 127.0.0.1 (`port` 0: any free port; given: restart on it). */
export async function listenSyncServer(opts: SyncServerOptions, port = 0): Promise<ListeningSyncServer> {
  const server = new SyncServer(opts);
  const httpServer = http.createServer((_q, r) => r.writeHead(404).end());
  server.attach(httpServer);
  await new Promise<void>((r) => httpServer.listen(port, '127.0.0.1', r));
  const actual = (httpServer.address() as { port: number }).port;
  return {
    server,
    http: httpServer,
    port: actual,
    url: `ws://127.0.0.1:${actual}${server.path}`,
    async close() {
      await server.close();
      await new Promise<void>((r) => httpServer.close(() => r()));
    },
  };
}
