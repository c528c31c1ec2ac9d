/**
 * The catalog (docs/catalog.md): packages with their versions and scan verdicts, what each version
 * depends on and where it runs (the placements deploying it and their edges), a version's readme
 * rendered as Markdown (sanitised), the deploy form (deploy-form.tsx), and upload of a package
 * archive (a blob, then published).
 */
import { useState } from 'preact/hooks';
import { enc, errorFrom } from '../api.js';
import { ErrorBox } from '../components/error-box.js';
import { Table } from '../components/table.js';
import { Link } from '../components/link.js';
import { Markdown } from '../components/markdown.js';
import { ago } from '../format.js';
import { useAction, useGet } from '../hooks.js';
import { useRoute } from '../router.js';
import { api, can, useApp } from '../store.js';
import type { List } from '../types.js';
import type { PackageSummary, PackageVersionView } from '../../../core/api/types.js';
import type { PackagePlacementView } from '../../../core/api/views.js';
import { DeployForm, scanText } from './deploy-form.js';

interface VersionDetail {
  readme?: string;
  icon?: string;
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
  // `/catalog?package=web` opens that package (the placement page links so).
  const route = useRoute();
  const [selected, setSelected] = useState<string | undefined>(route.query.get('package') ?? undefined);
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
      <Table
        columns={['Package', 'Latest', 'Versions', 'Scan', 'Description']}
        count={items.length}
        loading={list.loading}
        empty="No packages in this project yet."
      >
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
      </Table>
      {name && <PackageView key={name} name={name} onSelect={setSelected} />}
    </>
  );
}

/** `web@1.2.0 on 3 edges: e1, e2, e3`, with links to the placement and the edges. */
function Runs(props: { runs: PackagePlacementView[] }) {
  if (!props.runs.length) return <span class="muted">not deployed</span>;
  return (
    <ul class="runs">
      {props.runs.map((r) => (
        <li key={r.placement}>
          <Link href={`/placements/${enc(r.placement)}`}>{r.placement}</Link>{' '}
          <span class="muted">
            ({r.versionRange}
            {r.profile ? `, profile ${r.profile}` : ''})
          </span>
          {': '}
          {r.edgeCount === 0 ? (
            <span class="muted">no edge yet</span>
          ) : (
            <>
              {r.edgeCount} edge{r.edgeCount === 1 ? '' : 's'}:{' '}
              {r.edges.map((e, i) => (
                <span key={e}>
                  {i > 0 && ', '}
                  <Link href={`/edges/${enc(e)}`}>{e}</Link>
                </span>
              ))}
              {r.edgeCount > r.edges.length && ` and ${r.edgeCount - r.edges.length} more`}
            </>
          )}
        </li>
      ))}
    </ul>
  );
}

function PackageView(props: { name: string; onSelect(name: string): void }) {
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
      <div class="table-wrap">
        <table class="table" aria-label={`versions of ${props.name}`}>
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">Scan</th>
              <th scope="col">Signature database</th>
              <th scope="col">Depends on</th>
              <th scope="col">Runs on</th>
              <th scope="col">Published</th>
            </tr>
          </thead>
          <tbody>
            {vs.map((x) => (
              <tr key={x.version} aria-selected={x.version === v?.version} data-version={x.version}>
                <th scope="row">
                  <button type="button" class="linkish" onClick={() => setChosen(x.version)}>
                    {x.version}
                  </button>
                </th>
                <td>{scanText(x.scan)}</td>
                <td>{x.scan.engine ?? x.scan.error ?? ''}</td>
                <td>
                  {x.dependsOn.length === 0 ? (
                    <span class="muted">nothing</span>
                  ) : (
                    x.dependsOn.map((d, i) => (
                      <span key={d.name}>
                        {i > 0 && ', '}
                        <button type="button" class="linkish" onClick={() => props.onSelect(d.name)}>
                          {d.name}
                        </button>{' '}
                        <code>{d.version}</code>
                      </span>
                    ))
                  )}
                </td>
                <td>
                  <Runs runs={x.placements ?? []} />
                </td>
                <td>{ago(x.publishedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {detail.data?.readme && (
        <details open>
          <summary>Readme</summary>
          <Markdown text={detail.data.readme} label={`readme of ${props.name} ${v?.version ?? ''}`.trim()} />
        </details>
      )}
      {v && can(session, 'write') && <DeployForm key={`${v.name}@${v.version}`} version={v} />}
    </section>
  );
}
