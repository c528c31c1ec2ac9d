/**
 * @module Label selectors with Kubernetes semantics, edge selection for placements, and the two
 * CLI syntaxes: `--labels k=v,k2=v2` and kubectl-style `-l region=eu,tier!=small,gpu,!legacy`.
 *
 * An undefined selector matches nothing and an empty one (`{}`) matches everything: a placement
 * that names its edges explicitly has no selector and must not pick up the whole fleet.
 *
 * @example
 * matchesSelector({ region: 'eu' }, parseSelectorString('region in (eu,us),!legacy')); // true
 */
import type { LabelSelector } from './resources.js';

export type SelectorRequirement = NonNullable<LabelSelector['matchExpressions']>[number];

// These mirror the zod schemas in resources.ts (a test keeps them in step); the CLI parsers need
// a per-pair message, which a record schema cannot give.
const LABEL_KEY = /^([a-z0-9.-]+\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;
const KEY_HINT =
  'use a key like "region" or "example.com/tier" (letters, digits, "-", "_", "." and one optional "prefix/")';
const VALUE_HINT = 'use at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit';

const has = (labels: Record<string, string>, key: string): boolean => Object.hasOwn(labels, key);

function matchesRequirement(labels: Record<string, string>, req: SelectorRequirement): boolean {
  const present = has(labels, req.key);
  switch (req.operator) {
    case 'In':
      return present && (req.values ?? []).includes(labels[req.key]);
    case 'NotIn':
      // As in Kubernetes: an edge without the key is "not in" any set of values.
      return !present || !(req.values ?? []).includes(labels[req.key]);
    case 'Exists':
      return present;
    case 'DoesNotExist':
      return !present;
  }
}

/** Kubernetes semantics: all matchLabels AND all matchExpressions. `undefined` matches nothing, `{}` everything. */
export function matchesSelector(labels: Record<string, string>, sel: LabelSelector | undefined): boolean {
  if (sel === undefined) return false;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) {
    if (!has(labels, k) || labels[k] !== v) return false;
  }
  return (sel.matchExpressions ?? []).every((req) => matchesRequirement(labels, req));
}

export interface SelectableEdge {
  name: string;
  labels: Record<string, string>;
  unschedulable?: boolean;
}

/**
 * The edges a placement selects: selector matches plus explicitly named edges that exist, minus
 * unschedulable (drained) ones. Sorted and without duplicates, so callers can diff two results.
 */
export function selectEdges(
  edges: SelectableEdge[],
  spec: { edgeSelector?: LabelSelector; edges?: string[] },
): string[] {
  const named = new Set(spec.edges ?? []);
  const out = new Set<string>();
  for (const e of edges) {
    if (e.unschedulable) continue;
    if (named.has(e.name) || matchesSelector(e.labels, spec.edgeSelector)) out.add(e.name);
  }
  return [...out].sort();
}

function checkKey(key: string, where: string): void {
  if (!LABEL_KEY.test(key) || key.length > 317) throw new Error(`invalid label key "${key}" in ${where}: ${KEY_HINT}`);
}

function checkValue(value: string, key: string, where: string): void {
  if (value.length > 63 || !LABEL_VALUE.test(value))
    throw new Error(`invalid value "${value}" for label "${key}" in ${where}: ${VALUE_HINT}`);
}

/**
 * Parses `k=v,k2=v2` (the `--labels` flag). Empty values are allowed (`k=`), as in Kubernetes.
 * Throws an Error that names the bad pair and how to write it.
 */
export function parseLabels(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of s.split(',')) {
    const pair = raw.trim();
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq < 0)
      throw new Error(
        `invalid label "${pair}": write labels as key=value pairs separated by commas, e.g. region=eu,tier=small`,
      );
    const key = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    const where = `"${pair}"`;
    if (key === '') throw new Error(`invalid label "${pair}": the key is empty; write key=value, e.g. region=eu`);
    checkKey(key, where);
    if (value.includes('='))
      throw new Error(
        `invalid label "${pair}": a value cannot contain "="; separate pairs with commas, e.g. region=eu,tier=small`,
      );
    checkValue(value, key, where);
    if (has(out, key) && out[key] !== value)
      throw new Error(`label "${key}" is given twice ("${out[key]}" and "${value}"): keep one`);
    out[key] = value;
  }
  return out;
}

/** Splits on commas that are not inside parentheses: `a in (x,y),b` -> [`a in (x,y)`, `b`]. */
function splitTerms(s: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      terms.push(cur);
      cur = '';
    } else cur += ch;
  }
  terms.push(cur);
  return terms.map((t) => t.trim());
}

const SELECTOR_HINT = 'use key=value, key!=value, key, !key, "key in (a,b)" or "key notin (a,b)" separated by commas';

/**
 * Parses kubectl's `-l` syntax into a LabelSelector: `region=eu` (also `==`), `tier!=small`,
 * `gpu` (exists), `!legacy` (does not exist), `zone in (a,b)`, `zone notin (a,b)`.
 * The empty string gives `{}`, which matches every edge (as `kubectl get -l ""` does).
 */
export function parseSelectorString(s: string): LabelSelector {
  const matchLabels: Record<string, string> = {};
  const matchExpressions: SelectorRequirement[] = [];
  if (s.trim() === '') return {};
  for (const term of splitTerms(s)) {
    const where = `selector term "${term}"`;
    if (term === '') throw new Error(`invalid selector "${s}": empty term between commas; ${SELECTOR_HINT}`);
    let m: RegExpExecArray | null;
    if ((m = /^(\S+?)\s+(in|notin)\s*\((.*)\)$/.exec(term))) {
      const [, key, op, list] = m;
      checkKey(key, where);
      const values = list.split(',').map((v) => v.trim());
      if (list.trim() === '')
        throw new Error(`invalid ${where}: "${op}" needs at least one value, e.g. ${key} ${op} (a,b)`);
      for (const v of values) checkValue(v, key, where);
      matchExpressions.push({ key, operator: op === 'in' ? 'In' : 'NotIn', values: [...new Set(values)] });
    } else if ((m = /^([^=!\s]+)\s*!=\s*(.*)$/.exec(term))) {
      const [, key, value] = m;
      checkKey(key, where);
      checkValue(value, key, where);
      matchExpressions.push({ key, operator: 'NotIn', values: [value] });
    } else if ((m = /^([^=!\s]+)\s*(==?)\s*(.*)$/.exec(term))) {
      const [, key, op, value] = m;
      checkKey(key, where);
      // `region==` is a typo far more often than a wish for the empty value, which `region=` says.
      if (op === '==' && value === '')
        throw new Error(
          `invalid ${where}: nothing after "=="; write ${key}==VALUE (or ${key}= to match an empty value)`,
        );
      checkValue(value, key, where);
      // Two different equalities on one key can never both hold; keep that meaning instead of
      // letting the second silently replace the first in matchLabels.
      if (has(matchLabels, key) && matchLabels[key] !== value)
        matchExpressions.push({ key, operator: 'In', values: [value] });
      else matchLabels[key] = value;
    } else if ((m = /^!\s*(\S+)$/.exec(term))) {
      checkKey(m[1], where);
      matchExpressions.push({ key: m[1], operator: 'DoesNotExist' });
    } else if (/^\S+$/.test(term) && !/[=!<>()]/.test(term)) {
      checkKey(term, where);
      matchExpressions.push({ key: term, operator: 'Exists' });
    } else {
      throw new Error(`invalid ${where}: ${SELECTOR_HINT}`);
    }
  }
  const sel: LabelSelector = {};
  if (Object.keys(matchLabels).length > 0) sel.matchLabels = matchLabels;
  if (matchExpressions.length > 0) sel.matchExpressions = matchExpressions;
  return sel;
}

/** Renders a selector back in `-l` syntax, for messages and `describe` output. */
export function formatSelector(sel: LabelSelector | undefined): string {
  if (sel === undefined) return '<none>';
  const parts = Object.entries(sel.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const r of sel.matchExpressions ?? []) {
    const vals = r.values ?? [];
    if (r.operator === 'Exists') parts.push(r.key);
    else if (r.operator === 'DoesNotExist') parts.push(`!${r.key}`);
    else if (r.operator === 'NotIn' && vals.length === 1) parts.push(`${r.key}!=${vals[0]}`);
    else parts.push(`${r.key} ${r.operator === 'In' ? 'in' : 'notin'} (${vals.join(',')})`);
  }
  return parts.length ? parts.join(',') : '<all>';
}
