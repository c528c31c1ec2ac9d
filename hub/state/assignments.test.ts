/** The scheduler's tables on an in-memory database: what is written is what is read back. */
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { assignmentStoreSuite } from '../../test/fixtures/state-suites.js';

assignmentStoreSuite(() => memoryHubState().db);
