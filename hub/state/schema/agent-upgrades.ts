/** The schema component `agent-upgrades`: agent_upgrade_outcomes (hub/state/agent-upgrades.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const AGENT_UPGRADE_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE agent_upgrade_outcomes (
        project TEXT NOT NULL,
        upgrade TEXT NOT NULL,
        edge TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (project, upgrade, edge)
      );
      CREATE INDEX agent_upgrade_outcomes_by_edge ON agent_upgrade_outcomes (edge);
    `,
  },
];
