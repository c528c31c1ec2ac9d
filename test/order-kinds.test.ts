/**
 * The order kinds on the engine (hub/orders/engine.ts) pass the acceptance suite
 * (test/fixtures/order-kind-suite.ts) on one SQLite hub, each given and withdrawn as an operator
 * does: a Placement of a Workload applied and deleted, a DataObject applied and deleted, an
 * AgentUpgrade pushed, applied and deleted, and image staging as the images gate hands it over
 * (hub/images/staging.ts `setPlacement`). test/order-kinds-replicas.test.ts runs the same cases on
 * two hub replicas sharing a PostgreSQL.
 */
import { orderKindCases } from './fixtures/order-kind-suite.js';

orderKindCases();
