/**
 * @module An object schema that refuses fields it does not know, as `kubectl apply` (strict field
 * validation) does, naming the nearest known field: a typo must not silently become a default.
 * Every object kind's schema is built with it (core/resources.ts, core/cluster.ts).
 */
import { z } from 'zod';
import { unknownFieldsMessage } from './suggest.js';

export function strict<T extends z.ZodRawShape>(shape: T) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (iss) => (iss.code === 'unrecognized_keys' ? unknownFieldsMessage(iss.keys, known) : undefined),
  });
}
