/**
 * @module What a tunnel stream is for (docs/tunnel.md, "What users get"): `TunnelRequest`, the
 * OPEN header the hub sends (http to a workload port or the kube API, logs, exec, an action, the
 * agent's metrics), validated with zod by the edge; `TunnelHead`, the edge's META answer before any
 * data; and the channel bytes of interactive exec.
 */
import { z } from 'zod';

/** What a stream is for: the OPEN header, validated by the edge (peer input is untrusted). */
export const TunnelRequest = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('http'),
    /** `kube`: the edge's cluster API; otherwise a declared port of a workload. */
    target: z.union([
      z.literal('kube'),
      z.object({ workload: z.string().max(63), port: z.number().int().min(1).max(65535) }),
    ]),
    method: z.string().regex(/^[A-Z]{1,16}$/),
    /** Path and query on the target, starting with `/`. */
    path: z.string().startsWith('/').max(8192),
    headers: z.record(z.string().max(256), z.union([z.string().max(16384), z.array(z.string().max(16384)).max(64)])),
    /** An HTTP upgrade (WebSocket, SPDY): after the 101 the stream carries raw bytes both ways. */
    upgrade: z.boolean().optional(),
  }),
  z.object({
    type: z.literal('logs'),
    workload: z.string().max(63),
    container: z.string().max(253).optional(),
    follow: z.boolean().optional(),
    tail: z.number().int().min(0).optional(),
    /** `--since 5m`: lines of the last N seconds on the edge's clock (up to ten years). */
    sinceSeconds: z.number().int().min(1).max(315_360_000).optional(),
    /** `--since 2026-01-01T00:00:00Z`: lines written at or after this time (epoch ms). */
    sinceMs: z.number().int().min(0).max(8_640_000_000_000_000).optional(),
    /** Prefix each line with its RFC 3339 time. */
    timestamps: z.boolean().optional(),
  }),
  z.object({
    type: z.literal('exec'),
    workload: z.string().max(63),
    container: z.string().max(253).optional(),
    command: z.array(z.string().max(65536)).min(1).max(1024),
    interactive: z.boolean().optional(),
    tty: z.boolean().optional(),
    /** The client's terminal size, for a tty (`stty size` in the session). */
    size: z.object({ cols: z.number().int().min(1).max(10_000), rows: z.number().int().min(1).max(10_000) }).optional(),
  }),
  z.object({ type: z.literal('action'), workload: z.string().max(63), action: z.enum(['restart', 'stop', 'start']) }),
  /** The edge agent's own Prometheus page (`GET /api/v1/edges/NAME/metrics` on the hub). */
  z.object({ type: z.literal('metrics') }),
  /** A TCP connection to a declared port of a workload, for a ServiceExport (docs/interconnect.md). */
  z.object({ type: z.literal('tcp'), workload: z.string().max(63), port: z.number().int().min(1).max(65535) }),
]);
export type TunnelRequest = z.infer<typeof TunnelRequest>;

/** The edge's answer before any data: `{status, headers}` for http, `{ok}` for logs, `{exitCode,...}` for exec. */
export type TunnelHead =
  | { status: number; headers: Record<string, string | string[]> }
  | { ok: true; message?: string }
  | { exitCode: number; stdout?: string; stderr?: string };

/** Interactive exec: DATA from the edge starts with a channel byte (stdout, stderr); DATA to the edge is stdin. */
export const EXEC_STDOUT = 1;
export const EXEC_STDERR = 2;
