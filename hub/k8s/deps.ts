/**
 * @module What the Kubernetes API needs from the hub, as narrow interfaces: the object store's
 * reads and its one write path, how an object is presented (status, redaction), the token check.
 * hub/api/kube.ts builds them from the REST API's parts; nothing in hub/k8s knows those.
 */
import type { ApplyAction } from '../../core/api/types.js';
import type { Kind, Resource } from '../../core/resources.js';
import type { ApiPrincipal } from '../auth/principal.js';
import type { KubeApiState } from '../state/kube-api.js';
import type { ManagedFieldsEntry } from './convert.js';

export interface KubeObjects {
  get(kind: Kind, project: string, name: string): Resource | undefined;
  /** Ordered by project and name; `*` spans projects (`after` is then `project/name`). */
  list(kind: Kind, project: string, opts?: { limit?: number; after?: string }): Resource[];
  /** Projects that hold at least one object. */
  projects(): string[];
  /** The resourceVersion last handed out: a list's. */
  resourceVersion(): string;
  /**
   * The REST API's write (hub/objects.ts apply, with its checks), in one transaction; `dryRun`
   * runs every check and rolls it back. Warnings are for the `Warning` header.
   */
  write(
    obj: Resource,
    opts: {
      create?: boolean;
      update?: boolean;
      actor: string;
      dryRun?: boolean;
      /** The object's managed fields after the write, stored in its transaction. */
      managedFields?: (written: Resource) => ManagedFieldsEntry[];
    },
  ): { object: Resource; action: ApplyAction; warnings: string[]; managedFields?: ManagedFieldsEntry[] };
  managedFields(kind: Kind, project: string, name: string): ManagedFieldsEntry[] | undefined;
  /** An object input as it would be stored: validated, defaults filled (hub/objects.ts validateResource). */
  validate(input: Resource): Resource;
  delete(kind: Kind, project: string, name: string, opts: { actor: string; dryRun?: boolean }): Resource;
  /** An object as the API shows it: its status, Secret values redacted. */
  present(o: Resource): Resource;
}

export interface KubeApiDeps {
  version: string;
  verifyToken(token: string): ApiPrincipal | null;
  /**
   * Holds an open watch of `p` until the returned release is called; `close` ends it first if
   * its token is revoked or expires (hub/auth/token-streams.ts).
   */
  hold(p: ApiPrincipal, close: (reason: string) => void): () => void;
  objects: KubeObjects;
  watch: {
    /** The record of object changes (hub/state/kube-api.ts). */
    events: Pick<KubeApiState, 'after' | 'compactedThrough'>;
    /** Calls `fn` inside each object change's transaction (watches read the change after it commits). */
    onCommit(fn: () => void): void;
  };
}
