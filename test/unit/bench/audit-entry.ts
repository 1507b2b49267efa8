// An audit log entry of the drainer's, for the wave bench's readings of it: a node patch unless told otherwise; and
// the drain record such a patch writes.
import { formatDrainRecord } from '../../../lambda/cluster/marks/drain-record.js';
import { drainAnnotation } from '../../../lambda/cluster/marks/mark-keys.js';
import type { AuditEntry } from '../../cluster/kube.js';
import { lifecycleAction, markedAhead } from '../../fixtures/drain-sources.js';

export const auditEntry = (o: Partial<AuditEntry> & Pick<AuditEntry, 'atMs'>): AuditEntry => ({
  verb: 'patch',
  user: 'drainer',
  groups: [],
  userAgent: 'graceful-node-termination/1',
  code: 200,
  message: '',
  resource: 'nodes',
  subresource: undefined,
  namespace: undefined,
  name: 'node-b',
  requestURI: '/api/v1/nodes/node-b',
  requestObject: {},
  receivedMs: o.atMs - 5,
  ...o,
});

/**
 * The body of a node patch writing a drain record as the handler writes it: a sibling's marking ahead, or a drain's own
 * record (which keeps `aheadOf` when it adopted the marks of a marking ahead).
 */
export function recordPatch(kind: 'marked-ahead' | 'own', o: { aheadOf?: string } = {}): object {
  const source = kind === 'marked-ahead' ? markedAhead() : lifecycleAction('5b1d0f3e-bbbb-4bbb-8bbb-bbbbbbbbbbbb');
  const record = formatDrainRecord({
    source,
    notifiedAtMs: 0,
    startedAtMs: 0,
    updatedAtMs: 0,
    set: ['exclude-from-load-balancers', 'cordon'],
    ...o,
  });
  return { metadata: { annotations: { [drainAnnotation]: record } } };
}
