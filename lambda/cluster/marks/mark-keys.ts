// Every key we ever set on a Node (labels, annotations, taints) and on a workload, defined once.
// A mark carries its owner: the owner label (this deployment), which also lets the reconciler
// find every marked node with one label-selector list.

/**
 * https://kubernetes.io/docs/reference/labels-annotations-taints/#node-kubernetes-io-exclude-from-external-load-balancers
 */
export const excludeFromLoadBalancersLabel = 'node.kubernetes.io/exclude-from-external-load-balancers';

/** On every node carrying any mark of ours; its value is the deployment's name. */
export const ownerLabel = 'graceful-node-termination/owner';

/** Our drain record (JSON, DrainRecord). */
export const drainAnnotation = 'graceful-node-termination/drain';

/** Which invocation carries a long drain on next (claim.ts). */
export const handOffAnnotation = 'graceful-node-termination/hand-off';

/** Our PreferNoSchedule taint on nodes an instance refresh replaces; its value is the refresh id. */
export const outdatedTaintKey = 'graceful-node-termination/outdated';

/** On every node a refresh of ours marked (the refresh id), so its end finds them with one list. */
export const refreshLabel = 'graceful-node-termination/refresh';

/** Beside it when that refresh cordoned the node (strategy minimal): the cordon is ours to take back. */
export const refreshCordonedLabel = 'graceful-node-termination/refresh-cordoned';

/** The Auto Scaling group of that refresh (a group name can be longer than a label value). */
export const refreshGroupAnnotation = 'graceful-node-termination/refresh-group';

/** Our node auto repair's record (JSON, RepairRecord): the repair is decided once, across passes. */
export const repairAnnotation = 'graceful-node-termination/repair';

/**
 * Non-graceful node shutdown: pods without a matching toleration are deleted and their volumes
 * detached at once. Only for a node whose machine is really down.
 * https://kubernetes.io/docs/concepts/cluster-administration/node-shutdown/#non-graceful-node-shutdown
 */
export const outOfServiceTaintKey = 'node.kubernetes.io/out-of-service';

/**
 * Beside our out-of-service taint: the instance EC2 said was terminated when we set it (the taint is ours to take
 * back).
 */
export const outOfServiceAnnotation = 'graceful-node-termination/out-of-service';

/** On a node the termination policy passed over while it deferred a scale-in (DeferralMark, JSON). */
export const deferralAnnotation = 'graceful-node-termination/deferred';

/** On every node a `migrate` of ours marked: the migration id, so one list finds them. */
export const migrationLabel = 'graceful-node-termination/migration';

/** Beside it: the migration's record (JSON, MigrationRecord): its groups, its lease, whether it cordoned. */
export const migrationAnnotation = 'graceful-node-termination/migration';

/** Our PreferNoSchedule taint on the nodes a migration moves off; its value is the migration id. */
export const migratingTaintKey = 'graceful-node-termination/migrating';

/** The annotation `kubectl rollout restart` sets on the pod template (and nothing else). */
export const restartedAtAnnotation = 'kubectl.kubernetes.io/restartedAt';

/** Per workload, on the Deployment or its pods: "true" opts in, "false" marks it untouchable. */
export const surgeAnnotation = 'graceful-node-termination/surge-before-evict';

/** On the Leases of shared load-balancer readings: `load-balancer` (one reading) or `reader` (the turn). */
export const targetReadingLabel = 'graceful-node-termination/target-reading';

/** Which load balancer a reading Lease is about (JSON, LoadBalancerRef). */
export const loadBalancerAnnotation = 'graceful-node-termination/load-balancer';

/** Until when a waiting termination wants it read (epoch milliseconds). */
export const wantedUntilAnnotation = 'graceful-node-termination/wanted-until';

/** The last reading (JSON, ReadingResult): registered instances and their states, or why it failed. */
export const readingAnnotation = 'graceful-node-termination/reading';
