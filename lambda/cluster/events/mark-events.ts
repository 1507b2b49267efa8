// The Events of marks set and taken back outside a drain: launch, refresh, migrate, out-of-service.
import { type NodeRef, onNode, listed } from './event-shapes.js';

// --- launch ------------------------------------------------------------------------------

const tainted = (key: string, where: string) => `tainted ${key}:PreferNoSchedule, so evicted pods prefer ${where}`;

export const launchAdmitted = (node: NodeRef) =>
  onNode(
    node,
    'Normal',
    'LaunchAdmitted',
    'Node joined Ready without startup taints; lifecycle action completed with CONTINUE.',
  );

export const launchAbandoned = (node: NodeRef, reason: string) =>
  onNode(
    node,
    'Warning',
    'LaunchAbandoned',
    `Not healthy in time (${reason}); lifecycle action completed with ABANDON, Auto Scaling replaces the instance.`,
  );

export const drainMarksRemoved = (node: NodeRef, removed: readonly string[], why: string) =>
  onNode(
    node,
    'Normal',
    'DrainMarksRemoved',
    `${why}; removed what our last drain set ` +
      `(${removed.length > 0 ? removed.join(', ') : 'only its annotations'}). Marks set by others are left as they ` +
      `are.`,
  );

// --- refresh -----------------------------------------------------------------------------

export const markedOutdated = (
  node: NodeRef,
  o: { refreshId: string; group: string; instanceId: string; desired: string; cordoned: boolean; taintKey: string },
) =>
  onNode(
    node,
    'Normal',
    'MarkedOutdated',
    `Instance refresh ${o.refreshId} of group ${o.group} replaces instance ${o.instanceId} (desired: ${o.desired}): ` +
      `${o.cordoned ? 'cordoned (strategy minimal)' : tainted(o.taintKey, 'new nodes')}.`,
  );

export const outdatedMarksRemoved = (
  node: NodeRef,
  o: { refreshId: string; group: string; why: string; removed: readonly string[] },
) =>
  onNode(
    node,
    'Normal',
    'OutdatedMarksRemoved',
    `Instance refresh ${o.refreshId} of group ${o.group} ${o.why}: removed what it set ` +
      `(${o.removed.length > 0 ? o.removed.join(', ') : 'only its label'}).`,
  );

// --- migrate (the operator command) ---------------------------------------------------------

export const markedForMigration = (
  node: NodeRef,
  o: { id: string; from: string; to: string; cordoned: boolean; taintKey: string },
) =>
  onNode(
    node,
    'Normal',
    'MarkedForMigration',
    `Migration ${o.id} moves group ${o.from} to ${o.to}: ` +
      `${o.cordoned ? 'cordoned (--cordon-all)' : tainted(o.taintKey, 'the new group')}` +
      '; its instance is terminated through the lifecycle hook.',
  );

export const migrationMarksRemoved = (node: NodeRef, o: { id: string; why: string; removed: readonly string[] }) =>
  onNode(
    node,
    'Normal',
    'MigrationMarksRemoved',
    `Migration ${o.id} ${o.why}: removed what it set ` +
      `(${o.removed.length > 0 ? o.removed.join(', ') : 'only its label'}).`,
  );

// --- after an undrained release ------------------------------------------------------------
export const outOfServiceTainted = (node: NodeRef, instanceId: string, pods: readonly string[]) =>
  onNode(
    node,
    'Warning',
    'OutOfServiceTainted',
    `EC2 says instance ${instanceId} is terminated and ${pods.length} pod(s) were still bound to this node ` +
      `(${listed([...pods])}): tainted node.kubernetes.io/out-of-service=nodeshutdown:NoExecute so they and their ` +
      `volumes go now.`,
  );

export const outOfServiceRemoved = (node: NodeRef) =>
  onNode(
    node,
    'Normal',
    'OutOfServiceRemoved',
    'The node is Ready again, as another instance: our node.kubernetes.io/out-of-service taint was taken off.',
  );
