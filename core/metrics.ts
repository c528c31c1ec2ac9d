/**
 * @module Process metrics for a prom-client registry, clean under `promtool check metrics`.
 *
 * prom-client's defaults include three gauges named `*_total` (`nodejs_active_handles_total`,
 * `_requests_total`, `_resources_total`), which Prometheus reserves for counters: promtool fails
 * the whole page on them. They are dropped; the same counts by type remain as
 * `nodejs_active_handles`, `nodejs_active_requests` and `nodejs_active_resources` (sum them).
 */
import client from 'prom-client';

const MISNAMED = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/**
 * prom-client's process metrics in `registry`, names prefixed with `prefix`; the event-loop lag
 * histogram takes a sample every `lagSampleMs` (core/durations.ts says why not prom-client's 10 ms).
 */
export function collectProcessMetrics(registry: client.Registry, prefix: string, lagSampleMs: number): void {
  client.collectDefaultMetrics({ register: registry, prefix, eventLoopMonitoringPrecision: lagSampleMs });
  for (const name of MISNAMED) registry.removeSingleMetric(`${prefix}${name}`);
}
