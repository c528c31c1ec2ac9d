/**
 * @module The tunnel sessions each project has open on this hub process (docs/projects.md,
 * "Tunnel sessions"): a session is one request to an edge admitted by the gateway and served here
 * (a log stream, an exec, a proxied request or WebSocket, a kube request or watch, an action),
 * counted from its admission until its connection closes. Its project's `tunnelSessions` quota is
 * checked as one is admitted. Counted in memory, per hub replica: a request forwarded to the
 * replica that serves the edge is counted there, not where it arrived.
 */

export class ProjectSessions {
  private readonly open = new Map<string, number>();

  /** `check` refuses one more session of `project` that has `open` now (hub/projects/quotas.ts). */
  constructor(private readonly check?: (project: string, open: number) => void) {}

  /** The sessions of `project` open now. */
  of(project: string): number {
    return this.open.get(project) ?? 0;
  }

  /**
   * Admits one more session of `project` (the quota check throws 403 `over_quota`) and counts it
   * until `closed` calls back, once, when its connection closes.
   */
  take(project: string, closed: (release: () => void) => void): void {
    const n = this.of(project);
    this.check?.(project, n);
    this.open.set(project, n + 1);
    let released = false;
    closed(() => {
      if (released) return;
      released = true;
      const left = this.of(project) - 1;
      if (left > 0) this.open.set(project, left);
      else this.open.delete(project);
    });
  }
}
