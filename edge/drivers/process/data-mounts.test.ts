import { describe, expect, it } from 'vitest';
import { EGRESS_ANNOTATION } from '../../../core/data.js';
import { OBJECTS_MOUNT_ANNOTATION } from '../../../core/delivery.js';
import { dataMountNotices } from './data-mounts.js';

const pod = (annotations: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', annotations },
  spec: { containers: [{ name: 'main', command: ['true'] }] },
});

describe('dataMountNotices', () => {
  it('names the path not mounted and the variable the workload must use instead', () => {
    expect(
      dataMountNotices([
        pod({
          [EGRESS_ANNOTATION]: '[{"source": "/export", "target": "clips", "mode": "move", "maxBytes": "2GiB"}]',
          [OBJECTS_MOUNT_ANNOTATION]: '/objects',
        }),
      ]),
    ).toEqual([
      'data.outpost.dev/egress: the process driver mounts nothing at /export; the workload must write its export files to the directory in $OUTPOST_EXPORT_DIR',
      'data.outpost.dev/objects: the process driver mounts nothing at /objects; the workload must read the delivered objects from the directory in $OUTPOST_DATA_OBJECTS_DIR',
    ]);
  });

  it("names each export's own variable when there are several, and says nothing without a data mount", () => {
    expect(
      dataMountNotices([
        pod({ [EGRESS_ANNOTATION]: '[{"target": "clips"}, {"source": "/logs", "target": "app-logs"}]' }),
      ]),
    ).toEqual([
      'data.outpost.dev/egress: the process driver mounts nothing at /export, /logs; the workload must write its export files to the directory in $OUTPOST_EXPORT_DIR_CLIPS (export "clips"), $OUTPOST_EXPORT_DIR_APP_LOGS (export "app-logs")',
    ]);
    expect(dataMountNotices([pod({ team: 'a' })])).toEqual([]);
    // A declaration that does not parse is the egress decorator's to report (Degraded), not a notice.
    expect(dataMountNotices([pod({ [EGRESS_ANNOTATION]: 'nope' })])).toEqual([]);
  });
});
