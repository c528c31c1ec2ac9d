/** @module Branded identifiers shared by hub and edge. */

export type EdgeName = string & { readonly __brand: 'EdgeName' };
export type DocId = string & { readonly __brand: 'DocId' };

/** The two documents of an edge's mailbox. */
export type MailboxRole = 'spec' | 'report';

/** Edge and object names follow DNS-1123 labels, like Kubernetes names. */
export const NAME_PATTERN = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function isValidName(s: string): boolean {
  return NAME_PATTERN.test(s);
}

export function edgeName(s: string): EdgeName {
  if (!isValidName(s)) {
    throw new Error(
      `invalid edge name "${s}": use 1-63 lower-case letters, digits and '-', starting and ending with a letter or digit`,
    );
  }
  return s as EdgeName;
}

/** Document ids name their edge and role: `edge/<name>/spec`, `edge/<name>/report`. */
export function mailboxDocId(edge: EdgeName, role: MailboxRole): DocId {
  return `edge/${edge}/${role}` as DocId;
}

export function parseMailboxDocId(id: string): { edge: EdgeName; role: MailboxRole } | null {
  const m = /^edge\/([a-z0-9-]{1,63})\/(spec|report)$/.exec(id);
  if (!m || !isValidName(m[1])) return null;
  return { edge: m[1] as EdgeName, role: m[2] as MailboxRole };
}
