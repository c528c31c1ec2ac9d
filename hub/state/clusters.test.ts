/** The clusters' tables on an in-memory hub database (the same suite runs on PostgreSQL). */
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { clusterStateSuite } from '../../test/fixtures/cluster-state-suite.js';

clusterStateSuite(() => memoryHubState().state);
