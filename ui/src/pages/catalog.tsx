/**
 * The catalog (docs/catalog.md): packages with their versions and scan verdicts, a version's
 * readme, a form generated from its parameters (types, enums, required, secrets masked) with a
 * profile's values prefilled, "deploy to" a label selector with the live count of matching edges
 * (a Placement with `spec.package`, applied through /api/v1/apply), and upload of a package
 * archive (a blob, then published).
 */
import { useEffect, useState } from 'preact/hooks';
import { enc, errorFrom, query } from '../api.js';
import { ErrorBox } from '../components/error-box.js';
import { Link } from '../components/link.js';
import { ago } from '../format.js';
import { useAction, useGet } from '../hooks.js';
import { api, can, useApp } from '../store.js';
import type { List } from '../types.js';
import type { PackageScan, PackageSummary, PackageVersion, PackageVersionView } from '../../../core/api/types.js';
import type { Parameter } from '../../../core/package.js';
import { parseSelectorString } from '../../../core/selector.js';

interface VersionDetail {
  readme?: string;
  icon?: string;
}

function scanText(s: PackageScan): string {
  return s.state === 'Quarantined' ? `Quarantined (${s.signature ?? '?'})` : s.state;
}

/** Uploads the archive as a blob, then publishes it. */
async function upload(project: string, file: File, token: string): Promise<PackageVersionView> {
  const res = await fetch(`/api/v1/projects/${enc(project)}/blobs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/vnd.outpost.package.v1.tar+gzip' },
    body: await file.arrayBuffer(),
  });
  if (!res.ok) throw await errorFrom(res);
  const blob = (await res.json()) as { digest: string };
  return api.post<PackageVersionView>(`/api/v1/projects/${enc(project)}/packages`, { digest: blob.digest });
}

export function Catalog() {
  const session = useApp().session!;
  const list = useGet<List<PackageSummary>>(`/api/v1/projects/${enc(session.project)}/packages`, { live: true });
  const [selected, setSelected] = useState<string>();
  const items = list.data?.items ?? [];
  const name = selected ?? items[0]?.name;
  const up = useAction();
  const [uploaded, setUploaded] = useState<string>();
  return (
    <>
      <div class="title-row">
        <h1>Catalog</h1>
      </div>
      <p class="muted">
        Packages of project {session.project}: versions are scanned for malware before they can be deployed.
      </p>
      {can(session, 'write') && (
        <form
          class="upload"
          onSubmit={(e) => {
            e.preventDefault();
            const input = (e.currentTarget as HTMLFormElement).elements.namedItem('pkg') as HTMLInputElement;
            const f = input.files?.[0];
            if (!f) return;
            void up.run(async () => {
              const v = await upload(session.project, f, session.token);
              setUploaded(`${v.name} ${v.version} published (${scanText(v.scan)})`);
              setSelected(v.name);
              list.reload();
            });
          }}
        >
          <label for="pkg-file">Upload a package (.tgz from outpost package build)</label>{' '}
          <input id="pkg-file" name="pkg" type="file" accept=".tgz,.tar.gz,application/gzip" />{' '}
          <button type="submit" class="btn" disabled={up.busy}>
            Upload
          </button>
          {uploaded && (
            <span role="status" class="notice">
              {' '}
              {uploaded}
            </span>
          )}
          <ErrorBox error={up.error} />
        </form>
      )}
      <ErrorBox error={list.error} />
      <div class="table-wrap">
        <table class="table">
          <thead>
            <tr>
              <th scope="col">Package</th>
              <th scope="col">Latest</th>
              <th scope="col">Versions</th>
              <th scope="col">Scan</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {items.map((p) => (
              <tr key={p.name} aria-selected={p.name === name}>
                <th scope="row">
                  {p.icon && <img src={p.icon} alt="" width={20} height={20} />}{' '}
                  <button type="button" class="linkish" onClick={() => setSelected(p.name)}>
                    {p.name}
                  </button>
                </th>
                <td>{p.latest}</td>
                <td>{p.versions}</td>
                <td>{scanText(p.scan)}</td>
                <td>{p.description ?? ''}</td>
              </tr>
            ))}
            {items.length === 0 && !list.loading && (
              <tr>
                <td colSpan={5} class="muted">
                  No packages in this project yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      {name && <PackageView key={name} name={name} />}
    </>
  );
}

function PackageView(props: { name: string }) {
  const session = useApp().session!;
  const versions = useGet<List<PackageVersionView>>(
    `/api/v1/projects/${enc(session.project)}/packages/${enc(props.name)}`,
    {
      live: true,
    },
  );
  const vs = versions.data?.items ?? [];
  const [chosen, setChosen] = useState<string>();
  const v = vs.find((x) => x.version === chosen) ?? vs[0];
  const detail = useGet<VersionDetail>(
    v ? `/api/v1/projects/${enc(session.project)}/packages/${enc(props.name)}/${enc(v.version)}` : null,
  );
  return (
    <section aria-label={`package ${props.name}`}>
      <h2>{props.name}</h2>
      <ErrorBox error={versions.error} />
      <table class="table">
        <thead>
          <tr>
            <th scope="col">Version</th>
            <th scope="col">Scan</th>
            <th scope="col">Signature database</th>
            <th scope="col">Published</th>
          </tr>
        </thead>
        <tbody>
          {vs.map((x) => (
            <tr key={x.version} aria-selected={x.version === v?.version}>
              <th scope="row">
                <button type="button" class="linkish" onClick={() => setChosen(x.version)}>
                  {x.version}
                </button>
              </th>
              <td>{scanText(x.scan)}</td>
              <td>{x.scan.engine ?? x.scan.error ?? ''}</td>
              <td>{ago(x.publishedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {detail.data?.readme && (
        <details open>
          <summary>Readme</summary>
          <pre class="readme">{detail.data.readme}</pre>
        </details>
      )}
      {v && can(session, 'write') && <DeployForm key={`${v.name}@${v.version}`} version={v} />}
    </section>
  );
}

type Values = Record<string, string | number | boolean>;

function initialValues(v: PackageVersionView, profile: string): Values {
  const out: Values = {};
  for (const p of v.parameters) if (p.default !== undefined) out[p.name] = p.default;
  Object.assign(out, v.profiles[profile] ?? {});
  return out;
}

function DeployForm(props: { version: PackageVersionView }) {
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
      <button type="submit" class="btn primary" disabled={deploy.busy || v.scan.state !== 'Clean'}>
        Deploy
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
