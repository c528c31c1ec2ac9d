/**
 * The catalog's deploy form (docs/catalog.md, "The Catalog page"): generated from a package
 * version's parameters (types, enums, required, secrets masked) with a profile's values prefilled,
 * "deploy to" a label selector with the live count of matching edges, and a Placement with
 * `spec.package` applied through /api/v1/apply. A placement name already in use is said before
 * anything is sent: deploying under it replaces that placement (its selector, its workloads), so
 * the form asks for that explicitly.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, enc, query } from '../api.js';
import { ErrorBox } from '../components/error-box.js';
import { Link } from '../components/link.js';
import { useAction } from '../hooks.js';
import { api, useApp } from '../store.js';
import type { PlacementObj } from '../types.js';
import type { PackageScan, PackageVersionView } from '../../../core/api/types.js';
import type { Parameter } from '../../../core/package.js';
import { formatSelector, parseSelectorString } from '../../../core/selector.js';

export function scanText(s: PackageScan): string {
  return s.state === 'Quarantined' ? `Quarantined (${s.signature ?? '?'})` : s.state;
}

/** The placement named so in the project, or null when there is none. */
async function lookup(project: string, name: string, signal?: AbortSignal): Promise<PlacementObj | null> {
  try {
    return await api.get<PlacementObj>(`/api/v1/projects/${enc(project)}/placements/${enc(name)}`, signal);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  }
}

/** What an existing placement does, in a few words: what it deploys and where. */
function describePlacement(p: PlacementObj): string {
  const pkg = p.spec.package;
  const what = pkg
    ? `deploys package ${pkg.name}@${pkg.version}${p.status.package ? ` (${p.status.package.version})` : ''}`
    : `places ${p.spec.workloads.join(', ')}`;
  const where = p.spec.edgeSelector
    ? ` to ${formatSelector(p.spec.edgeSelector)}`
    : p.spec.edges?.length
      ? ` to ${p.spec.edges.join(', ')}`
      : '';
  return `${what}${where}, ${p.status.selectedEdges} edge${p.status.selectedEdges === 1 ? '' : 's'}`;
}

type Values = Record<string, string | number | boolean>;

function initialValues(v: PackageVersionView, profile: string): Values {
  const out: Values = {};
  for (const p of v.parameters) if (p.default !== undefined) out[p.name] = p.default;
  Object.assign(out, v.profiles[profile] ?? {});
  return out;
}

export function DeployForm(props: { version: PackageVersionView }) {
  const v = props.version;
  const session = useApp().session!;
  const profiles = Object.keys(v.profiles);
  const [profile, setProfile] = useState(profiles[0] ?? '');
  const [values, setValues] = useState<Values>(() => initialValues(v, profiles[0] ?? ''));
  const [range, setRange] = useState(v.version);
  const [placement, setPlacement] = useState(v.name);
  const [selector, setSelector] = useState('');
  const [matched, setMatched] = useState<number | string>();
  const [done, setDone] = useState<string>();
  const deploy = useAction();
  // The placement already named so (null: none; undefined: not known yet), and whether to replace it.
  const [existing, setExisting] = useState<PlacementObj | null>();
  const [replace, setReplace] = useState(false);

  useEffect(() => {
    setExisting(undefined);
    setReplace(false);
    const name = placement.trim();
    if (!name) return;
    const ctl = new AbortController();
    const t = setTimeout(() => {
      lookup(session.project, name, ctl.signal)
        .then(setExisting)
        .catch(() => undefined);
    }, 250);
    return () => {
      clearTimeout(t);
      ctl.abort();
    };
  }, [placement, session.project, done]);

  // The live count of edges the selector matches (the hub filters: usable at 10,000 edges).
  useEffect(() => {
    const ctl = new AbortController();
    const t = setTimeout(() => {
      try {
        parseSelectorString(selector);
      } catch (err) {
        setMatched((err as Error).message);
        return;
      }
      api
        .get<{ matched?: number; total: number }>(
          `/api/v1/projects/${enc(session.project)}/edges${query({ labelSelector: selector.trim(), limit: 1 })}`,
          ctl.signal,
        )
        .then((r) => setMatched(r.matched ?? r.total))
        .catch(() => undefined);
    }, 250);
    return () => {
      clearTimeout(t);
      ctl.abort();
    };
  }, [selector, session.project]);

  const set = (p: Parameter, raw: string | boolean) =>
    setValues((cur) => {
      const next = { ...cur };
      if (raw === '') delete next[p.name];
      else next[p.name] = p.type === 'boolean' ? !!raw : p.type === 'string' ? String(raw) : Number(raw);
      return next;
    });

  return (
    <form
      class="deploy"
      aria-label="Deploy"
      onSubmit={(e) => {
        e.preventDefault();
        void deploy.run(async () => {
          // Asked again at submit: the name may have been typed faster than the check above.
          const cur = await lookup(session.project, placement);
          setExisting(cur);
          if (cur && !replace) return;
          const spec: Record<string, unknown> = {
            edgeSelector: parseSelectorString(selector),
            package: { name: v.name, version: range, ...(profile ? { profile } : {}), values },
          };
          await api.post(`/api/v1/apply${query({ project: session.project })}`, {
            objects: [{ apiVersion: 'outpost.dev/v1alpha1', kind: 'Placement', metadata: { name: placement }, spec }],
          });
          setDone(placement);
        });
      }}
    >
      <h3>
        Deploy {v.name} {v.version}
      </h3>
      {v.scan.state !== 'Clean' && (
        <p class="warning" role="alert">
          This version is {scanText(v.scan)}: the hub refuses to deploy it.
        </p>
      )}
      <div class="field">
        <label for="d-placement">Placement name</label>
        <input id="d-placement" value={placement} onInput={(e) => setPlacement(e.currentTarget.value)} required />
        {existing && (
          <div class="warning" role="alert" data-testid="placement-exists">
            <p>
              Placement <Link href={`/placements/${enc(existing.metadata.name)}`}>{existing.metadata.name}</Link>{' '}
              exists: it {describePlacement(existing)}. Deploying under this name replaces it; choose another name to
              deploy beside it.
            </p>
            <label>
              <input type="checkbox" checked={replace} onChange={(e) => setReplace(e.currentTarget.checked)} /> Replace
              placement {existing.metadata.name}
            </label>
          </div>
        )}
      </div>
      <div class="field">
        <label for="d-range">Version or range</label>
        <input id="d-range" value={range} onInput={(e) => setRange(e.currentTarget.value)} required />
      </div>
      {profiles.length > 0 && (
        <div class="field">
          <label for="d-profile">Profile</label>
          <select
            id="d-profile"
            value={profile}
            onChange={(e) => {
              setProfile(e.currentTarget.value);
              setValues(initialValues(v, e.currentTarget.value));
            }}
          >
            <option value="">(none)</option>
            {profiles.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </div>
      )}
      <fieldset>
        <legend>Parameters</legend>
        {v.parameters.map((p) => {
          const id = `d-param-${p.name}`;
          const cur = values[p.name];
          return (
            <div class="field" key={p.name}>
              <label for={id}>
                {p.name}
                {p.required ? ' *' : ''}{' '}
                <span class="muted">
                  ({p.secret ? 'secret ' : ''}
                  {p.type})
                </span>
              </label>
              {p.enum ? (
                <select
                  id={id}
                  required={p.required}
                  value={cur === undefined ? '' : String(cur)}
                  onChange={(e) => set(p, e.currentTarget.value)}
                >
                  <option value="">(unset)</option>
                  {p.enum.map((o) => (
                    <option key={String(o)} value={String(o)}>
                      {String(o)}
                    </option>
                  ))}
                </select>
              ) : p.type === 'boolean' ? (
                <input
                  id={id}
                  type="checkbox"
                  checked={cur === true}
                  onChange={(e) => set(p, e.currentTarget.checked)}
                />
              ) : (
                <input
                  id={id}
                  type={p.secret ? 'password' : p.type === 'string' ? 'text' : 'number'}
                  autoComplete={p.secret ? 'new-password' : 'off'}
                  step={p.type === 'integer' ? 1 : 'any'}
                  min={p.minimum}
                  max={p.maximum}
                  required={p.required}
                  value={cur === undefined ? '' : String(cur)}
                  onInput={(e) => set(p, e.currentTarget.value)}
                />
              )}
              {p.description && <small class="muted">{p.description}</small>}
            </div>
          );
        })}
      </fieldset>
      <div class="field">
        <label for="d-selector">
          Deploy to (a label selector, e.g. region=eu,tier!=small or zone in (a,b); empty: every edge)
        </label>
        <input id="d-selector" value={selector} onInput={(e) => setSelector(e.currentTarget.value)} />
        <span role="status" class="muted" data-testid="matching-edges">
          {typeof matched === 'number'
            ? `${matched} matching edge${matched === 1 ? '' : 's'}`
            : (matched ?? 'counting…')}
        </span>
      </div>
      <button
        type="submit"
        class="btn primary"
        disabled={deploy.busy || v.scan.state !== 'Clean' || (!!existing && !replace)}
      >
        {existing ? `Replace ${existing.metadata.name}` : 'Deploy'}
      </button>
      <ErrorBox error={deploy.error} />
      {done && (
        <p class="notice" role="status">
          Placement <Link href={`/placements/${enc(done)}`}>{done}</Link> applied.
        </p>
      )}
    </form>
  );
}
