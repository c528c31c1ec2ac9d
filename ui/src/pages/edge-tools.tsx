/**
 * Reaching into one workload on an edge from the browser, through the hub's tunnel (docs/tunnel.md):
 * its recent logs, a one-shot command (exec) with its output and exit code, and a link that opens
 * one of its declared ports (a one-time proxy session). Operators and admins only.
 */
import { useState } from 'preact/hooks';
import { enc, query } from '../api.js';
import { ErrorBox } from '../components/error-box.js';
import { useAction, useGet } from '../hooks.js';
import { api } from '../store.js';
import type { EdgeWorkloadView } from '../types.js';

interface WorkloadManifests {
  spec: { manifests: { kind?: string; spec?: unknown }[] };
}

/** containerPort values of a workload's pod templates (Pod, Deployment and friends). */
function declaredPorts(w: WorkloadManifests | undefined): number[] {
  const ports = new Set<number>();
  const visit = (v: unknown, key?: string) => {
    if (key === 'containerPort' && typeof v === 'number') ports.add(v);
    else if (Array.isArray(v)) v.forEach((x) => visit(x));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) visit(x, k);
  };
  for (const m of w?.spec.manifests ?? []) visit(m.spec);
  return [...ports].sort((a, b) => a - b);
}

/** A shell-like split of a command line: words, with "double" or 'single' quotes. */
export function splitCommand(line: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (let m = re.exec(line); m; m = re.exec(line)) out.push(m[1] ?? m[2] ?? m[3]);
  return out;
}

export function WorkloadTools(props: { project: string; edge: string; workloads: EdgeWorkloadView[] }) {
  const [workload, setWorkload] = useState(props.workloads[0]?.name ?? '');
  const [logs, setLogs] = useState<string | undefined>();
  const [stamps, setStamps] = useState(false);
  const [command, setCommand] = useState('');
  const [exec, setExec] = useState<{ exitCode: number; stdout: string; stderr: string } | undefined>();
  const [link, setLink] = useState<string | undefined>();
  const act = useAction();
  const wl = useGet<WorkloadManifests>(
    workload ? `/api/v1/projects/${enc(props.project)}/workloads/${enc(workload)}` : null,
    { live: false },
  );
  const ports = declaredPorts(wl.data);
  const [port, setPort] = useState<number | undefined>();
  const e = enc(props.edge);
  const w = enc(workload);
  if (props.workloads.length === 0) return null;
  return (
    <section aria-labelledby="tools-h">
      <h2 id="tools-h">Logs, exec and service</h2>
      <div class="tools-row">
        <label>
          Workload{' '}
          <select
            value={workload}
            onChange={(ev) => {
              setWorkload((ev.target as HTMLSelectElement).value);
              setLogs(undefined);
              setExec(undefined);
              setLink(undefined);
            }}
          >
            {props.workloads.map((x) => (
              <option key={x.name} value={x.name}>
                {x.name}
              </option>
            ))}
          </select>
        </label>
        <button
          type="button"
          class="btn"
          disabled={act.busy}
          onClick={() =>
            act.run(async () =>
              setLogs(
                await api.text(
                  `/api/v1/edges/${e}/logs/${w}${query({ tail: 200, timestamps: stamps ? 'true' : undefined })}`,
                ),
              ),
            )
          }
        >
          Show logs
        </button>
        <label>
          <input
            type="checkbox"
            checked={stamps}
            onChange={(ev) => setStamps((ev.target as HTMLInputElement).checked)}
          />{' '}
          Timestamps
        </label>
        {ports.length > 0 && (
          <>
            <label>
              Port{' '}
              <select
                value={port ?? ports[0]}
                onChange={(ev) => setPort(Number((ev.target as HTMLSelectElement).value))}
              >
                {ports.map((x) => (
                  <option key={x} value={x}>
                    {x}
                  </option>
                ))}
              </select>
            </label>
            <button
              type="button"
              class="btn"
              disabled={act.busy}
              onClick={() =>
                act.run(async () => {
                  const r = await api.post<{ url: string; path: string }>(`/api/v1/edges/${e}/proxy-session`, {
                    workload,
                    port: port ?? ports[0],
                  });
                  setLink(r.path ?? r.url);
                })
              }
            >
              Service link
            </button>
          </>
        )}
      </div>
      {link && (
        <p>
          <a href={link} target="_blank" rel="noopener">
            Open {workload} port {port ?? ports[0]} (one-time link)
          </a>
        </p>
      )}
      <form
        class="tools-row"
        onSubmit={(ev) => {
          ev.preventDefault();
          const argv = splitCommand(command);
          if (argv.length === 0) return;
          void act.run(async () => setExec(await api.post(`/api/v1/edges/${e}/exec/${w}`, { command: argv })));
        }}
      >
        <label class="grow">
          Command{' '}
          <input
            type="text"
            value={command}
            placeholder="cat /etc/hostname"
            onInput={(ev) => setCommand((ev.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" class="btn" disabled={act.busy || command.trim() === ''}>
          Run
        </button>
      </form>
      <ErrorBox error={act.error} />
      {exec && (
        <div aria-label="command output">
          <p class={exec.exitCode === 0 ? 'ok-text' : 'bad-text'}>exit code {exec.exitCode}</p>
          <pre class="code" tabIndex={0}>
            {exec.stdout}
            {exec.stderr}
          </pre>
        </div>
      )}
      {logs !== undefined && (
        <pre class="code logs" tabIndex={0} aria-label={`logs of ${workload}`}>
          {logs || '(no output yet)'}
        </pre>
      )}
    </section>
  );
}
