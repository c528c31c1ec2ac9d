/**
 * @module The status of ServiceExports and ServiceImports as the API shows them
 * (hub/interconnect/index.ts computes them; docs/interconnect.md).
 */

/** One edge that runs an export's workload. */
export interface ServingEdgeView {
  edge: string;
  /** Connected to the hub now: a connection may be relayed to it. */
  online: boolean;
  /** The workload's state there, as the edge last reported it (Ready, Failed, ...). */
  phase?: string;
  /** Online with the workload Ready: new connections go to healthy edges first. */
  healthy: boolean;
  /**
   * What the hub replica answering relayed to it: connections open, made in all, failed after
   * they were made, bytes to the service (out) and back (in), the last failure (also one to connect).
   */
  open?: number;
  total?: number;
  failed?: number;
  bytesIn?: number;
  bytesOut?: number;
  lastError?: string;
  lastErrorAt?: string;
}

export interface ServiceExportStatusView {
  /** `serving 1/2 healthy, 2 online`, or why nothing serves. */
  summary: string;
  online: number;
  healthy: number;
  serving: ServingEdgeView[];
}

/** One edge an import selects, and what it reported of its listener. */
export interface ConsumingEdgeView {
  edge: string;
  online: boolean;
  /** Offline: why its connections are refused now (at once, by the edge itself). */
  refusing?: string;
  listening: boolean;
  /** Why it does not listen (the port is taken). */
  error?: string;
  open: number;
  total: number;
  /** Refused at open (by the hub, or the hub was away), failed after they were made. */
  refused: number;
  failed: number;
  /** Bytes of closed connections: to the service (out) and back (in). */
  bytesIn: number;
  bytesOut: number;
  /** Connect latency over the edge's last 1,000 connections (accepted to connected to the workload). */
  connectP50Ms?: number;
  connectP99Ms?: number;
  lastError?: string;
  lastErrorAt?: string;
}

export interface ServiceImportStatusView {
  /** `listening 2/2, 3 open`, or the reason connections are refused. */
  summary: string;
  /** `PROJECT/NAME` of the export. */
  export: string;
  /** Set when connections are refused whatever the edges do: the export is missing, not granted, or nothing serves it. */
  refused?: string;
  listening: number;
  open: number;
  /** Over the consuming edges: connections refused or failed, bytes, the worst edge's connect p50/p99. */
  errors: number;
  bytesIn: number;
  bytesOut: number;
  connectP50Ms?: number;
  connectP99Ms?: number;
  edges: ConsumingEdgeView[];
}
