/** The edges state module on an in-memory hub database: what each method stores and reads back. */
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { edgeStateSuite } from '../../test/fixtures/state-suites.js';

edgeStateSuite(() => memoryHubState().state);
