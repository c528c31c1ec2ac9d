import fs from 'node:fs';
import client from 'prom-client';
import { describe, expect, it } from 'vitest';
import { EDGE_LAG_SAMPLE_MS, HUB_LAG_SAMPLE_MS } from './durations.js';
import { collectProcessMetrics } from './metrics.js';

/** Times this thread went to sleep waiting (each wake-up of an idle event loop is one). */
function sleeps(): number {
  const status = fs.readFileSync('/proc/thread-self/status', 'utf8');
  return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)![1]);
}

async function sleepsDuring(ms: number): Promise<number> {
  const before = sleeps();
  await new Promise((r) => setTimeout(r, ms));
  return sleeps() - before;
}

describe('process metrics', () => {
  it('leave the Prometheus-reserved *_total gauges out and keep the per-type counts', async () => {
    const registry = new client.Registry();
    collectProcessMetrics(registry, 'outpost_test_', HUB_LAG_SAMPLE_MS);
    const names = (await registry.getMetricsAsJSON()).map((m) => m.name);
    expect(names).toContain('outpost_test_nodejs_active_handles');
    expect(names).toContain('outpost_test_nodejs_eventloop_lag_p99_seconds');
    expect(names.filter((n) => /_total$/.test(n) && n.includes('active_'))).toEqual([]);
  });

  it('sample the event-loop lag without waking an idle process 100 times a second', async () => {
    // Counts of wake-ups, not time: an idle thread sleeps once per timer it waits for, however
    // busy the machine. The lag histogram of the registry above samples every HUB_LAG_SAMPLE_MS.
    const agent = new client.Registry();
    collectProcessMetrics(agent, 'outpost_agent_', EDGE_LAG_SAMPLE_MS);
    const ours = await sleepsDuring(2_000);
    expect(ours).toBeLessThan((2_000 / HUB_LAG_SAMPLE_MS) * 2 + 20);
    // prom-client's default (10 ms): the wake-ups this test would see without the setting.
    collectProcessMetrics(new client.Registry(), 'outpost_default_', 10);
    const theirs = await sleepsDuring(2_000);
    expect(theirs).toBeGreaterThan(ours + 100);
  });
});
