/** The event log on an in-memory hub database. */
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { eventLogSuite } from '../../test/fixtures/state-suites.js';

eventLogSuite(() => memoryHubState().state);
