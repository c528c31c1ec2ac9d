/** The DataObject delivery projection on an in-memory hub database (the same suite runs on PostgreSQL). */
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { dataProgressSuite } from '../../test/fixtures/state-suites.js';

dataProgressSuite(() => memoryHubState().state);
