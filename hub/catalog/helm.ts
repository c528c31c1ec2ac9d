/**
 * @module The hub's chart renderer: `outpost-helm` (build/helm, Helm's own library), run as a
 * child process, never in the hub's own process: a chart is code its publisher wrote (templates
 * with loops and `tpl`), so each run has a time bound (killed past it), an output bound (killed
 * past it), and at most RENDERS_AT_ONCE run at a time. It renders as `helm template` does: on
 * the client, with no cluster, repository or network (docs/catalog.md, "Helm charts").
 *
 * @example
 * const helm = new HelmRenderer('/usr/local/bin/outpost-helm');
 * const info = await helm.inspect('/var/lib/outpost/blobs/sha256/ab/...');
 * const out = await helm.render({ chart: file, release: 'web', namespace: 'default', values: {} });
 */
import { spawn } from 'node:child_process';
import {
  CHART_RENDER_TIMEOUT_MS,
  MAX_CHART_RENDER_OUTPUT_BYTES,
  type ChartDependency,
  type ChartHook,
  type ChartInfo,
} from '../../core/chart.js';

export const NO_HELM_MESSAGE =
  'the hub has no chart renderer: start it with --helm PATH naming outpost-helm (built by build/helm/build.sh, shipped beside the outpost executable) to publish and deploy Helm charts';

/** Renderings run at once; more wait their turn (the hub shares its cores with its other work). */
export const RENDERS_AT_ONCE = 2;

/** A chart the renderer refused (Helm's own message), or a run past its bounds. */
export class ChartRenderError extends Error {
  constructor(
    message: string,
    /** A bound was passed (time, output): may succeed another time, so it is not remembered as the chart's answer. */
    readonly transient = false,
  ) {
    super(message);
  }
}

export interface RenderRequest {
  /** The chart archive (.tgz). */
  chart: string;
  release: string;
  namespace: string;
  values: Record<string, unknown>;
}

export interface RenderOutput {
  chart: string;
  version: string;
  dependencies: ChartDependency[];
  /** Helm's rendered manifests (a YAML stream), hooks excluded. */
  manifest: string;
  hooks: ChartHook[];
}

export class HelmRenderer {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    /** The outpost-helm executable; undefined: none configured, charts are refused. */
    readonly bin: string | undefined,
    private readonly bounds: { timeoutMs: number; maxOutputBytes: number } = {
      timeoutMs: CHART_RENDER_TIMEOUT_MS,
      maxOutputBytes: MAX_CHART_RENDER_OUTPUT_BYTES,
    },
  ) {}

  /** The chart's metadata, its subcharts and versions, values.yaml and profiles. */
  async inspect(file: string): Promise<ChartInfo> {
    const r = (await this.run(['inspect', file])) as ChartInfo & { description?: string; readme?: string };
    return r;
  }

  render(req: RenderRequest): Promise<RenderOutput> {
    return this.run(['render'], JSON.stringify(req)) as Promise<RenderOutput>;
  }

  private async run(args: string[], input?: string): Promise<unknown> {
    if (!this.bin) throw new ChartRenderError(NO_HELM_MESSAGE);
    if (this.running >= RENDERS_AT_ONCE) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await this.spawn(this.bin, args, input);
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private spawn(bin: string, args: string[], input: string | undefined): Promise<unknown> {
    const { timeoutMs, maxOutputBytes } = this.bounds;
    return new Promise((resolve, reject) => {
      // No HOME, no proxies, no helm settings of the hub's user: the renderer reads nothing but its input.
      const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin' } });
      const out: Buffer[] = [];
      let outBytes = 0;
      let err = '';
      let stopped: ChartRenderError | undefined;
      const stop = (e: ChartRenderError) => {
        stopped ??= e;
        child.kill('SIGKILL');
      };
      const timer = setTimeout(
        () =>
          stop(
            new ChartRenderError(
              `rendering the chart took longer than ${timeoutMs / 1000} s (CHART_RENDER_TIMEOUT_MS) and was stopped: make its templates simpler, or lighter values`,
              true,
            ),
          ),
        timeoutMs,
      );
      child.stdout.on('data', (c: Buffer) => {
        outBytes += c.length;
        if (outBytes > maxOutputBytes)
          return stop(
            new ChartRenderError(
              `the chart rendered more than ${maxOutputBytes} bytes (MAX_CHART_RENDER_OUTPUT_BYTES) and was stopped: one workload on one edge is at most that; split the chart or render less with its values`,
            ),
          );
        out.push(c);
      });
      child.stderr.on('data', (c: Buffer) => {
        if (err.length < 8192) err += c.toString('utf8');
      });
      child.stdin.on('error', () => undefined);
      child.on('error', (e) => {
        clearTimeout(timer);
        reject(new ChartRenderError(`the chart renderer ${bin} could not run: ${e.message} (check --helm)`));
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        if (stopped) return reject(stopped);
        const text = Buffer.concat(out).toString('utf8');
        let answer: { error?: string } | undefined;
        try {
          answer = JSON.parse(text) as { error?: string };
        } catch {
          answer = undefined;
        }
        if (answer?.error !== undefined) return reject(new ChartRenderError(`helm: ${answer.error}`));
        if (code !== 0 || answer === undefined)
          return reject(
            new ChartRenderError(
              `the chart renderer ${bin} failed (exit ${code}): ${err.trim().split('\n').slice(-3).join(' ') || 'no message'}`,
            ),
          );
        resolve(answer);
      });
      child.stdin.end(input ?? '');
    });
  }
}
