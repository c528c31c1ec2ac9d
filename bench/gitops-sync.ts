/**
 * @module `npx tsx bench/gitops-sync.ts [OBJECTS]`: how long a GitRepo takes to apply a repository
 * of OBJECTS objects (default 1,000: four Workloads to a Placement, one file each), to re-sync it
 * with nothing changed, and to apply a commit that changes one file. A hub in this process, the
 * Git server of the tests (test/fixtures/git-server.ts: `git http-backend` behind basic auth) on
 * loopback; each figure is the median of RUNS syncs asked through `POST .../gitrepos/NAME/sync`.
 * Results go to docs/benchmarks.md ("GitRepo sync") by hand.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startHub } from '../hub/hub.js';
import { GitWork, placementYaml, startGitServer, workloadYaml } from '../test/fixtures/git-server.js';

const OBJECTS = Number(process.argv[2] ?? 1000);
const RUNS = 5;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-bench-gitops-'));
  const hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0', insecureHttp: true });
  const git = await startGitServer(path.join(dir, 'git'));
  try {
    const work = new GitWork(git, 'fleet', dir);
    const files: Record<string, string> = {};
    const groups = Math.ceil(OBJECTS / 5);
    let n = 0;
    for (let g = 0; g < groups && n < OBJECTS; g++) {
      const names: string[] = [];
      for (let i = 0; i < 4 && n < OBJECTS - 1; i++, n++) {
        const w = `w-${g}-${i}`;
        names.push(w);
        files[`apps/${g}/${w}.yaml`] = workloadYaml(w, 'registry.example.com/app:1.0');
      }
      if (names.length) {
        files[`apps/${g}/placement.yaml`] = placementYaml(`p-${g}`, names, `{ matchLabels: { site: p-${g} } }`);
        n++;
      }
    }
    work.commit(files, 'initial');
    const api = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(`${hub.url}${p}`, {
        method,
        headers: { authorization: `Bearer ${hub.adminToken}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await res.json()) as any;
      if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    const sync = async () => {
      const t = performance.now();
      const st = await api('POST', '/api/v1/projects/default/gitrepos/fleet/sync');
      if (st.state !== 'Synced') throw new Error(`not synced: ${JSON.stringify(st).slice(0, 500)}`);
      return { ms: performance.now() - t, objects: st.objects as number };
    };
    const first: number[] = [];
    const same: number[] = [];
    const oneFile: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const name = 'fleet';
      await api('POST', '/api/v1/apply', {
        objects: [
          {
            apiVersion: 'outpost.dev/v1alpha1',
            kind: 'GitRepo',
            metadata: { name, project: 'default' },
            spec: {
              repo: git.url('fleet'),
              branch: 'main',
              paths: ['apps'],
              interval: '1h',
              insecure: true,
              credentials: { username: git.username, password: git.password },
            },
          },
        ],
      });
      const a = await sync();
      if (a.objects !== OBJECTS) throw new Error(`applied ${a.objects} objects, expected ${OBJECTS}`);
      first.push(a.ms);
      same.push((await sync()).ms);
      work.commit({ 'apps/0/w-0-0.yaml': workloadYaml('w-0-0', `registry.example.com/app:1.${run + 1}`) }, 'one file');
      oneFile.push((await sync()).ms);
      // Start over: the GitRepo and its objects go, so the next run applies them all again.
      await api('DELETE', '/api/v1/projects/default/gitrepos/fleet');
      for (const kind of ['placements', 'workloads'] as const)
        for (const o of (await api('GET', `/api/v1/projects/default/${kind}`)).items)
          await api('DELETE', `/api/v1/projects/default/${kind}/${o.metadata.name}`);
    }
    const fmt = (xs: number[]) => `${Math.round(median(xs))} ms (runs: ${xs.map((x) => Math.round(x)).join(', ')})`;
    console.log(`GitRepo sync, ${OBJECTS} objects in ${Object.keys(files).length} files, median of ${RUNS}:`);
    console.log(`  first sync (fetch, parse, apply all):      ${fmt(first)}`);
    console.log(`  re-sync, nothing changed (fetch, drift):   ${fmt(same)}`);
    console.log(`  sync of a commit changing one file:        ${fmt(oneFile)}`);
  } finally {
    await git.close();
    await hub.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
