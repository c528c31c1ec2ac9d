/** Hub replicas on an in-memory hub database (the same suite runs on PostgreSQL). */
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { hubReplicaSuite } from '../../test/fixtures/state-suites.js';

hubReplicaSuite(() => memoryHubState().db);
