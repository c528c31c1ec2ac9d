/**
 * @module The image cache as one module: the cache of registries' images on the hub (its OCI pull
 * API, hub/images/routes.ts) and the pins that hold each workload revision's images, which tell
 * the scheduler when a project's images change. Images on the hub are spelled with the hub's own
 * names, known once it listens.
 */
import type { Registry } from '../../core/resources.js';
import type { HubBlobs } from '../blobs/index.js';
import { ImageCache } from '../images/cache.js';
import { ImagePins } from '../images/pins.js';
import type { HubModule } from '../module.js';
import { rolledBackFrom, type ObjectStore } from '../objects.js';
import type { Scheduler } from '../scheduler/index.js';
import type { HubSecrets } from '../secrets.js';
import type { HubState } from '../state/index.js';

export interface ImagesModule extends HubModule {
  readonly cache: ImageCache;
  readonly pins: ImagePins;
  /** The hub listens: its names (`host:port`) as images on it spell them. */
  listening(hosts: string[]): void;
}

export function createImagesModule(o: {
  state: HubState;
  blobs: HubBlobs;
  objects: ObjectStore;
  secrets: HubSecrets;
  scheduler: Scheduler;
}): ImagesModule {
  const { state, blobs, objects, scheduler } = o;
  const cache = new ImageCache(state, blobs, {
    registry: (project, name) => objects.get<Registry>('Registry', project, name),
    box: o.secrets.box,
  });
  let selfHosts: string[] = [];
  const pins = new ImagePins(
    state.imagePins,
    cache,
    {
      selfHosts: () => selfHosts,
      rolledBackFrom: (project, workload, revision) =>
        rolledBackFrom(objects.revisions(project, workload).find((r) => r.revision === revision)?.changeCause),
    },
    (project) => scheduler.markProject(project),
  );
  scheduler.useImagePins(pins);
  return {
    name: 'images',
    cache,
    pins,
    listening: (hosts) => (selfHosts = hosts),
    stop: () => pins.stop(),
  };
}
