/** The object tables on an in-memory hub database: resourceVersions, generations, revisions. */
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { objectStateSuite } from '../../test/fixtures/state-suites.js';

objectStateSuite(() => memoryHubState().state);
