import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../test/helpers.js';
import { CliError } from './errors.js';
import { checkObjects, objectsOfText, readSources } from './sources.js';

const WL = (name: string) => `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata:
  name: ${name}
spec:
  manifests:
    - apiVersion: v1
      kind: Pod
      metadata: { name: ${name} }
      spec: { containers: [{ name: c, image: busybox }] }
`;
const PL = `apiVersion: outpost.dev/v1alpha1
kind: Placement
metadata: { name: eu }
spec: { workloads: [web], edgeSelector: { matchLabels: { region: eu } } }
`;

const dirs: string[] = [];
function dir(files: Record<string, string>): string {
  const d = tempDir('outpost-cli-src-');
  dirs.push(d);
  for (const [f, text] of Object.entries(files)) fs.writeFileSync(path.join(d, f), text);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const stdin = (text = ''): PassThrough => {
  const s = new PassThrough();
  s.end(text);
  return s;
};

async function failure(p: Promise<unknown>): Promise<CliError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return err as CliError;
}

describe('readSources', () => {
  it('reads a multi-document file, labelling each object with its document and line', async () => {
    const d = dir({ 'app.yaml': `${WL('web')}---\n${PL}` });
    const objs = await readSources([path.join(d, 'app.yaml')], stdin());
    expect(objs.map((o) => (o.object as { kind: string }).kind)).toEqual(['Workload', 'Placement']);
    expect(objs[1].where).toBe(`${path.join(d, 'app.yaml')}, document 2 (line 12)`);
  });

  it("reads a directory's .yaml, .yml and .json files in name order and skips the rest", async () => {
    const d = dir({
      'b.yml': PL,
      'a.yaml': WL('web'),
      'c.json': JSON.stringify({
        apiVersion: 'outpost.dev/v1alpha1',
        kind: 'Workload',
        metadata: { name: 'api' },
        spec: { manifests: [{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } }] },
      }),
      'README.md': '# not a manifest',
    });
    fs.mkdirSync(path.join(d, 'sub.yaml'));
    const objs = await readSources([d], stdin());
    expect(
      objs.map(
        (o) => `${(o.object as { kind: string }).kind}/${(o.object as { metadata: { name: string } }).metadata.name}`,
      ),
    ).toEqual(['Workload/web', 'Placement/eu', 'Workload/api']);
  });

  it('reads stdin for -, and expands a List', async () => {
    const list = {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { kind: 'Placement', metadata: { name: 'a' } },
        { kind: 'Placement', metadata: { name: 'b' } },
      ],
    };
    const objs = await readSources(['-'], stdin(JSON.stringify(list)));
    expect(objs.map((o) => o.where)).toEqual([
      '<stdin>, document 1 (line 1), item 1',
      '<stdin>, document 1 (line 1), item 2',
    ]);
  });

  it('names the file, document and line of a YAML syntax error', async () => {
    const d = dir({ 'bad.yaml': `${WL('web')}---\nkind: Placement\nmetadata: { name: eu\n` });
    const err = await failure(readSources([path.join(d, 'bad.yaml')], stdin()));
    expect(err.message).toMatch(
      new RegExp(`^${path.join(d, 'bad.yaml').replace(/[/.]/g, '\\$&')}: YAML document 2 \\(line \\d+, column \\d+\\)`),
    );
    expect(err.exitCode).toBe(1);
  });

  it('says what is missing: a file, or manifest files in a directory', async () => {
    expect((await failure(readSources(['/nonexistent/x.yaml'], stdin()))).message).toBe(
      'cannot read /nonexistent/x.yaml: no such file or directory',
    );
    const d = dir({ 'notes.txt': 'x' });
    expect((await failure(readSources([d], stdin()))).message).toMatch(/holds no \.yaml, \.yml or \.json file/);
    expect((await failure(readSources(['-', '-'], stdin()))).message).toMatch(/stdin can be read only once/);
  });
});

describe('checkObjects', () => {
  it('reports every invalid object with its place and field, before anything is sent', async () => {
    const d = dir({
      'a.yaml': `${WL('web')}---\napiVersion: apps/v1\nkind: Deployment\nmetadata: { name: d }\n---\nkind: Placement\nmetadata: { name: eu }\nspec: { workloads: [] , edges: [e1] }\n`,
    });
    const objs = await readSources([d], stdin());
    let msg = '';
    try {
      await checkObjects(objs, 'default');
    } catch (err) {
      msg = (err as Error).message;
    }
    const f = path.join(d, 'a.yaml');
    expect(msg).toContain('nothing was applied; fix these first:');
    expect(msg).toContain(
      `${f}, document 2 (line 12): kind: must be one of Edge, Workload, Placement, Registry, AgentUpgrade, DataObject, GitRepo, ClusterTemplate, Cluster (got "Deployment"): wrap Kubernetes manifests in a Workload`,
    );
    expect(msg).toContain(`${f}, document 3 (line 16) (Placement eu): spec.workloads: name at least one workload`);
  });

  it('refuses the same object twice', async () => {
    const d = dir({ 'a.yaml': WL('web'), 'b.yaml': WL('web') });
    const objs = await readSources([d], stdin());
    await expect(checkObjects(objs, 'default')).rejects.toThrow(
      /workload\/web is also defined in .*a\.yaml, document 1/,
    );
  });

  it('accepts valid objects', async () => {
    const d = dir({ 'a.yaml': `${WL('web')}---\n${PL}` });
    const f = path.join(d, 'a.yaml');
    await expect(checkObjects(objectsOfText(fs.readFileSync(f, 'utf8'), f), 'default')).resolves.toBeUndefined();
  });
});
