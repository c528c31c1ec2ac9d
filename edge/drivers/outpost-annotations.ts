/**
 * @module The annotations Outpost reads itself, kept from the runtimes. Keys in the outpost.dev
 * domain (`outpost.dev/...`, `data.outpost.dev/...`) are the edge's own business: the egress and
 * objects declarations (edge/data/) become directories, variables and mounts before a driver sees
 * the manifests; a pull Secret's registry CA (core/images.ts) becomes the podman driver's pull
 * settings. A runtime has no use for them and may refuse them: podman 4.3's `kube play` rejects an
 * annotation value past 63 characters ("value length exceeds Kubernetes max 63"), which the egress
 * declaration of docs/data.md passes, and the workload never ran.
 *
 * Each driver calls `withoutOutpostAnnotations` at its boundary with its runtime, after reading
 * what it consumes itself, and adds its own labels and annotations (ownership labels, a restart
 * stamp) after: those are not stripped.
 */
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether an annotation key is in the outpost.dev domain: `outpost.dev/x` or `SUB.outpost.dev/x`. */
export function isOutpostAnnotation(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return false;
  const domain = key.slice(0, slash);
  return domain === 'outpost.dev' || domain.endsWith('.outpost.dev');
}

/**
 * The metadata objects of a manifest that carry annotations a runtime reads: its own and its pod
 * template's (`spec.template`; a CronJob's `spec.jobTemplate` and the pod template in it).
 */
function metadataOf(m: Obj): Obj[] {
  const spec = isObj(m.spec) ? m.spec : undefined;
  const job = isObj(spec?.jobTemplate) ? spec.jobTemplate : undefined;
  const jobSpec = isObj(job?.spec) ? job.spec : undefined;
  return [m, spec?.template, job, jobSpec?.template]
    .filter(isObj)
    .map((x) => x.metadata)
    .filter(isObj);
}

/**
 * `m` without the outpost.dev annotations on its metadata and its pod template's (an `annotations`
 * map left empty is dropped); `m` itself, not a copy, when it has none. Labels are kept.
 *
 * @example
 * withoutOutpostAnnotations({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', annotations:
 *   { 'data.outpost.dev/egress': '[...]', 'team': 'a' } } })
 * // => { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', annotations: { team: 'a' } } }
 */
export function withoutOutpostAnnotations<M extends object>(m: M): M {
  const has = metadataOf(m as Obj).some(
    (md) => isObj(md.annotations) && Object.keys(md.annotations).some(isOutpostAnnotation),
  );
  if (!has) return m;
  const out = structuredClone(m);
  for (const md of metadataOf(out as Obj)) {
    if (!isObj(md.annotations)) continue;
    const kept = Object.entries(md.annotations).filter(([k]) => !isOutpostAnnotation(k));
    if (kept.length) md.annotations = Object.fromEntries(kept);
    else delete md.annotations;
  }
  return out;
}
