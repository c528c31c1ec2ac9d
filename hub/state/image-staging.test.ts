/** Image staging orders and reports on an in-memory hub database (the same suite runs on PostgreSQL). */
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { imageStagingSuite } from '../../test/fixtures/state-suites.js';

imageStagingSuite(() => memoryHubState().state);
