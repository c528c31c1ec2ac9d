/**
 * @module Parsers of the flags of `outpost hub` and `outpost edge` that take a value: a bad value
 * is a usage error (exit code 2) that names the flag, the value and what is wrong with it.
 */
import { parseByteSize } from '../core/blobs.js';
import { parseDuration } from '../core/durations.js';
import { parseLabels } from '../core/selector.js';
import { optionParser } from '../cli/index.js';

export const labelsOption = optionParser(parseLabels);

export const byteSizeOption = optionParser(parseByteSize);

export const durationOption = optionParser((value) => {
  const ms = parseDuration(value);
  if (ms < 1) throw new Error(`"${value}" is not a positive duration (e.g. 90s, 10m)`);
  return ms;
});

export const positiveIntegerOption = optionParser((value) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`"${value}" is not a positive integer (e.g. 4096)`);
  return n;
});
