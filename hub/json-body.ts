/**
 * @module A JSON request body for the hub's hono routes, refused with a clear 400 when it is not
 * JSON (its size is bounded before any route: hub/http-limits.ts `apiBodyLimit`).
 */
import type { Context } from 'hono';
import { OutpostError } from '../core/errors.js';

export async function jsonBody<T = unknown>(c: Context): Promise<T> {
  try {
    return (await c.req.json()) as T;
  } catch {
    throw new OutpostError('bad_request', 'the request body is not valid JSON');
  }
}
