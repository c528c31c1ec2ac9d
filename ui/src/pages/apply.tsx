/** Apply any YAML (new workloads and placements): the same validate-then-change path as `outpost apply`. */
import { useState } from 'preact/hooks';
import { YamlEditor } from '../components/editor.js';
import { Link } from '../components/link.js';
import { can, useApp } from '../store.js';
import type { ApplyResponse } from '../types.js';

export const TEMPLATE = `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata:
  name: hello
spec:
  manifests:
    - apiVersion: v1
      kind: Pod
      metadata:
        name: hello
      spec:
        containers:
          - name: web
            image: localhost/outpost-busybox:latest
            command: ["busybox", "httpd", "-f", "-p", "8080", "-h", "/tmp"]
---
apiVersion: outpost.dev/v1alpha1
kind: Placement
metadata:
  name: hello-eu
spec:
  edgeSelector:
    matchLabels:
      region: eu
  workloads: [hello]
`;

export function ApplyPage() {
  const session = useApp().session!;
  const [result, setResult] = useState<ApplyResponse>();
  const [key, setKey] = useState(0);
  if (!can(session, 'write')) {
    return (
      <>
        <h1>Apply YAML</h1>
        <p>A {session.role} token cannot change objects. Ask an admin for an operator token.</p>
      </>
    );
  }
  return (
    <>
      <h1>Apply YAML</h1>
      <p class="muted">
        Workloads and placements for project <strong>{session.project}</strong> (objects without{' '}
        <code>metadata.project</code> go there). The hub checks every object before it changes any.
      </p>
      {result && (
        <div class="notice" role="status">
          Applied:{' '}
          {result.results.map((r, i) => (
            <span key={i}>
              {i > 0 && ', '}
              <Link
                href={`/${r.kind === 'Workload' ? 'workloads' : r.kind === 'Placement' ? 'placements' : 'edges'}/${encodeURIComponent(r.name)}`}
              >
                {r.kind} {r.name}
              </Link>{' '}
              {r.action}
            </span>
          ))}
        </div>
      )}
      <YamlEditor
        key={key}
        title="Objects (YAML, several separated by ---)"
        project={session.project}
        initial={TEMPLATE}
        allowUnchanged
        onApplied={(r) => {
          setResult(r);
          setKey(key + 1);
        }}
      />
    </>
  );
}
