/** @module What hub and CLI say alike about a GitRepo's sync (docs/gitops.md). */
import type { GitRepoSyncError } from './api/views.js';

/** `file:line (Kind name): path: message`, the form of one sync error in messages, events and the CLI. */
export function formatSyncError(e: GitRepoSyncError): string {
  const where = e.file ? `${e.file}${e.line ? `:${e.line}` : ''}` : '';
  const what = e.kind ? `${e.kind}${e.name ? ` ${e.name}` : ''}` : '';
  const head = [where, what ? `(${what})` : ''].filter(Boolean).join(' ');
  return `${head ? `${head}: ` : ''}${e.path ? `${e.path}: ` : ''}${e.message}`;
}
