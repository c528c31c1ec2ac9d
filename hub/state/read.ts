/**
 * @module The value types of the hub's SQL: a parameter and a read. Apart from sql.ts, which
 * imports the PostgreSQL client, so that the client can take reads without importing sql.ts back.
 */

export type Param = string | number | bigint | null | Buffer;

/** A read a state module makes, as a value: run with `allOf`/`oneOf`, or given ahead to `prefetch`. */
export interface Read {
  sql: string;
  params: Param[];
  /**
   * The same read for many keys at once (`keyed`): `prefetch` runs it once for the reads of one
   * group (a statement for a batch of edges instead of one each) and answers each read with the
   * rows whose `column` holds its `key`, in the order the read of all gives them. Its rows may
   * carry more columns than the single read's.
   */
  many?: { group: string; key: string; column: string; read(keys: string[]): Read };
}
