/** AgentUpgrade orders and progress on an in-memory hub database (the same suite runs on PostgreSQL). */
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { agentUpgradeSuite } from '../../test/fixtures/state-suites.js';

agentUpgradeSuite(() => memoryHubState().state);
