/** The status projection on an in-memory hub database: what a report leaves and what summaries read. */
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { statusStateSuite } from '../../test/fixtures/state-suites.js';

statusStateSuite(memoryHubState);
