/**
 * @module The data mounts of docs/data.md the process driver cannot make, said in the status.
 *
 * The egress declaration (`data.outpost.dev/egress`, each export's `source`) and the objects
 * annotation (`data.outpost.dev/objects`) ask for a directory mounted inside the containers. A host
 * process gets no mount: the edge names the directories in variables instead (edge/data/). A
 * workload written for podman that writes to `/export` would run Ready while its files never
 * leave the site, so the status message of a running workload names the variable to use. It stays
 * Ready (not Degraded), as with the other fields this driver ignores (`image`, a volume's
 * `mountPath`): a workload that reads the variable works, and nothing on site can tell which does.
 */
import { EGRESS_ANNOTATION, EXPORT_DIR_ENV, egressOf, exportDirEnv } from '../../../core/data.js';
import { OBJECTS_DIR_ENV, OBJECTS_MOUNT_ANNOTATION } from '../../../core/delivery.js';

const annotationsOf = (m: unknown): Record<string, unknown> =>
  (m as { metadata?: { annotations?: Record<string, unknown> } } | null)?.metadata?.annotations ?? {};

/** One sentence per data mount the manifests ask for, naming the path not mounted and the variable to read. */
export function dataMountNotices(manifests: readonly unknown[]): string[] {
  const out: string[] = [];
  // A declaration that does not parse makes the workload Degraded through edge/data/egress.ts.
  const egress = egressOf(manifests);
  if ('rules' in egress && egress.rules.length) {
    const rules = egress.rules;
    const vars =
      rules.length === 1
        ? `$${EXPORT_DIR_ENV}`
        : rules.map((r) => `$${exportDirEnv(r.target)} (export "${r.target}")`).join(', ');
    out.push(
      `${EGRESS_ANNOTATION}: the process driver mounts nothing at ${rules.map((r) => r.source).join(', ')}; ` +
        `the workload must write its export files to the directory in ${vars}`,
    );
  }
  const mounts = [
    ...new Set(
      manifests
        .map((m) => annotationsOf(m)[OBJECTS_MOUNT_ANNOTATION])
        .filter((v): v is string => typeof v === 'string' && v.startsWith('/')),
    ),
  ];
  if (mounts.length)
    out.push(
      `${OBJECTS_MOUNT_ANNOTATION}: the process driver mounts nothing at ${mounts.join(', ')}; ` +
        `the workload must read the delivered objects from the directory in $${OBJECTS_DIR_ENV}`,
    );
  return out;
}
