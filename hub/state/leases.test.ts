/** Edge leases on an in-memory hub database (the same suite runs on PostgreSQL). */
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { edgeLeaseSuite } from '../../test/fixtures/state-suites.js';

edgeLeaseSuite(() => memoryHubState().db);
