/**
 * @module Parsers of the flags of `outpost hub` and `outpost edge` that take a value: a bad value
 * is a UsageError (exit code 2) that says what is wrong with it.
 */
import { parseByteSize } from '../core/blobs.js';
import { parseLabels } from '../core/selector.js';
import { UsageError } from '../cli/index.js';

export function labelsOption(v: string): Record<string, string> {
  try {
    return parseLabels(v);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export function byteSizeOption(v: string): number {
  try {
    return parseByteSize(v);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}
