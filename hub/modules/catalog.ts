/**
 * @module The catalog as one module: packages and Helm charts published as blobs and scanned
 * (hub/catalog/index.ts), charts rendered per edge by outpost-helm off the hub's own process
 * (hub/catalog/chart-renders.ts, helm.ts), and the scheduler's gates that hold an edge until what
 * its placements depend on is there and its charts are rendered (hub/catalog/gate.ts).
 */
import type { BlobDigest } from '../../core/blobs.js';
import type { SecretBox } from '../secrets.js';
import type { HubBlobs } from '../blobs/index.js';
import { ChartRenders } from '../catalog/chart-renders.js';
import { chartsGate, dependsOnGate } from '../catalog/gate.js';
import { HelmRenderer } from '../catalog/helm.js';
import { Catalog } from '../catalog/index.js';
import type { ObjectStore } from '../objects.js';
import type { HubOptions } from '../options.js';
import type { Scheduler } from '../scheduler/index.js';
import type { HubState } from '../state/index.js';

export function createCatalogModule(o: {
  state: HubState;
  blobs: HubBlobs;
  objects: ObjectStore;
  box: SecretBox;
  scheduler: Scheduler;
  scanner: HubOptions['scanner'];
  /** outpost-helm (`--helm`); undefined: charts are refused. */
  helm: string | undefined;
  scanRetryMs: number | undefined;
}): { catalog: Catalog; charts: ChartRenders } {
  const { state, blobs, objects, scheduler } = o;
  const helm = new HelmRenderer(o.helm);
  const catalog = new Catalog({
    state,
    blobs,
    objects,
    box: o.box,
    scanner: o.scanner,
    helm,
    ...(o.scanRetryMs !== undefined ? { retryMs: o.scanRetryMs } : {}),
  });
  scheduler.addGate(dependsOnGate(state.catalog, objects));
  const charts = new ChartRenders(
    helm,
    (digest) => blobs.files.path(digest as BlobDigest),
    (project) => scheduler.markProject(project),
  );
  scheduler.useChartRendering(charts);
  scheduler.addGate(chartsGate());
  return { catalog, charts };
}
