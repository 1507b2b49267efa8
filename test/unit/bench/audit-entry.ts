// An audit log entry of the drainer's, for the wave bench's readings of it: a node patch unless told otherwise.
import type { AuditEntry } from '../../cluster/kube.js';

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
