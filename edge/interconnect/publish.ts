/**
 * @module The imports the consuming edge listens for, published to the driver's workloads by name
 * (`Driver.publishImports`: the kubernetes driver's Service and Endpoints per import). One call at a
 * time; again at once when the list changes, and every `everyMs` while there is something to keep
 * (what someone changed or deleted is put back) or the last call failed. The problems it returns
 * go into each import's report (edge/interconnect/listeners.ts).
 */
import { createLogger } from '../../core/logger.js';
import type { PublishedImport } from '../drivers/driver.js';

const log = createLogger('edge:interconnect');

export interface ImportPublicationDeps {
  publish(imports: PublishedImport[]): Promise<Record<string, string>>;
  /** How often the publication is done again. */
  everyMs: number;
  /** The problems changed: the report is to be written. */
  changed(): void;
}

const keyOf = (l: PublishedImport[] | undefined): string =>
  l === undefined ? '' : JSON.stringify([...l].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)));

export class ImportPublication {
  private want: PublishedImport[] | undefined;
  private running = false;
  private again = false;
  private failed = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private problems = new Map<string, string>();
  /** The last failure logged: the same again is not logged again (an edge with no cluster yet). */
  private lastFailure: string | undefined;

  constructor(private readonly d: ImportPublicationDeps) {}

  /**
   * The imports to publish now (each listened for at its address); undefined while that is not
   * known yet, when nothing is touched (an agent starting does not remove what it published before).
   */
  set(want: PublishedImport[] | undefined): void {
    if (this.stopped || want === undefined || keyOf(want) === keyOf(this.want)) return;
    this.want = want;
    this.run();
  }

  /** Why import `name` is not published, if it is not. */
  problemOf(name: string): string | undefined {
    return this.problems.get(name);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private run(): void {
    if (this.stopped || this.want === undefined) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    this.running = true;
    const want = this.want;
    this.d
      .publish(want)
      .then(
        (problems) => {
          this.failed = false;
          this.lastFailure = undefined;
          return new Map(Object.entries(problems));
        },
        (err: unknown) => {
          this.failed = true;
          const message = (err as Error).message;
          if (message !== this.lastFailure)
            log.warn({ err }, 'interconnect: publishing the imports to the workloads failed; tried again');
          this.lastFailure = message;
          const why = `cannot make the import reachable by name to the workloads: ${(err as Error).message}`;
          return new Map(want.map((i) => [i.name, why]));
        },
      )
      .then((problems) => {
        const before = JSON.stringify([...this.problems]);
        this.problems = problems;
        if (JSON.stringify([...problems]) !== before) this.d.changed();
      })
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.run();
        } else if (!this.stopped && (this.failed || (this.want?.length ?? 0) > 0)) {
          this.timer = setTimeout(() => this.run(), this.d.everyMs);
          this.timer.unref();
        }
      });
  }
}
