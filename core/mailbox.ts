/**
 * @module The mailbox of one edge, two Automerge documents with one writer each (the hub writes
 * `spec`, the edge writes `report`), split in core/mailbox/ and re-exported here, the one entry
 * everything else imports: docs.ts holds the document types, the schema version and the schemas of
 * the agent upgrade order and progress; spec.ts reads the spec (`readSpec`, `EdgeSpecState`) and
 * writes it (`writeSpecTo`, workloads, labels, the agent upgrade and DataObject orders,
 * `materializeSpec`); report.ts reads the report (`readReport`, `EdgeReportState`) and writes it
 * (inventory, workload status, local intents, upgrade progress, deliveries, `materializeReport`);
 * local-state.ts holds the merge rule of local intents over the spec (`localState`).
 */
export {
  AGENT_UPGRADE_STATES,
  AgentUpgradeOrder,
  AgentUpgradeProgress,
  FAILED_UPGRADE_STATES,
  INTENT_ACTIONS,
  MAILBOX_SCHEMA,
  type AgentUpgradeState,
  type IntentAction,
  type IntentDoc,
  type ReportDoc,
  type ReportObjectDoc,
  type ReportWorkloadDoc,
  type SpecDoc,
  type SpecWorkloadDoc,
} from './mailbox/docs.js';
export { localState, type LocalState } from './mailbox/local-state.js';
export {
  addIntent,
  deleteReportWorkload,
  initReport,
  materializeReport,
  pruneClearedIntents,
  putReportWorkload,
  readReport,
  readReportAgentUpgrade,
  readReportCluster,
  readReportData,
  setInventory,
  setReportAgentUpgrade,
  setReportCluster,
  setReportData,
  type EdgeReportState,
  type Intent,
  type ObjectStatus,
  type ObservedWorkload,
  type ReportedWorkload,
} from './mailbox/report.js';
export {
  deleteSpecWorkload,
  initSpec,
  materializeSpec,
  putSpecAgentUpgrade,
  putSpecCluster,
  putSpecData,
  putSpecWorkload,
  readSpec,
  readSpecAgentUpgrade,
  readSpecCluster,
  readSpecData,
  setSpecAgentUpgrade,
  setSpecData,
  setSpecLabels,
  specDataNames,
  writeSpecTo,
  type EdgeSpecState,
  type SpecWorkload,
} from './mailbox/spec.js';
