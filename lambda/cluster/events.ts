// Every Kubernetes Event we write, as a named constructor, and the log lines the construct's
// alarms count: what people read in `kubectl describe node` and what pages them is defined
// here, once (Karpenter keeps its Events the same way:
// https://github.com/kubernetes-sigs/karpenter/blob/main/pkg/controllers/node/termination/terminator/events/events.go).
import type { ClusterEvent, NodeInfo, PodInfo } from './cluster-ports.js';
import { podKey } from './pods.js';

type NodeRef = Pick<NodeInfo, 'name' | 'uid'>;
type PodRef = Pick<PodInfo, 'name' | 'namespace' | 'uid'>;

/** Logged when a drain hits its deadline; the DrainsTimedOut alarm counts it. */
export const drainTimedOutMessage = 'drain deadline reached with pods still on the node; completing anyway';
/** Logged when DEADLINE_POLICY=retain abandons the action; the InstancesRetained alarm counts it. */
export const instanceRetainedMessage = 'drain deadline reached: completing with ABANDON so the group retains the instance, cordoned (DEADLINE_POLICY=retain)';
/** Logged when a launch could not be checked; the LaunchesUnchecked alarm counts it. */
export const launchUncheckedMessage = 'could not reach the cluster to check the new node; admitting it unchecked';
/** Logged when a launch is abandoned (NodeCreationFailure); the LaunchesAbandoned alarm counts it. */
export const launchAbandonedMessage = 'new node did not become healthy in time; abandoning the launch so the group replaces the instance';
/** Logged when node auto repair holds back (storm control), with the RepairStorms metric the RepairsHeld alarm watches. */
export const repairHeldMessage = 'node auto repair held (storm control)';
/** Logged when the cluster refused the drainer (RBAC, access entry); the FunctionErrors alarm fires with it. */
export const accessDeniedMessage = 'the cluster refused the drainer; check its access entry and ClusterRole';

const onNode = (node: NodeRef, type: ClusterEvent['type'], reason: string, message: string): ClusterEvent => ({
  regarding: { kind: 'Node', name: node.name, uid: node.uid },
  type,
  reason,
  message,
});

const onPod = (pod: PodRef, type: ClusterEvent['type'], reason: string, message: string): ClusterEvent => ({
  regarding: { kind: 'Pod', name: pod.name, namespace: pod.namespace, uid: pod.uid },
  type,
  reason,
  message,
});

/** At most ten names in an Event, then how many more. */
export function listed(names: readonly string[]): string {
  return names.length <= 10 ? names.join(', ') : `${names.slice(0, 10).join(', ')} and ${names.length - 10} more`;
}

// --- termination -------------------------------------------------------------------------

export const drainStarted = (node: NodeRef, why: string) => onNode(node, 'Normal', 'DrainStarted', why);

export const cordoned = (node: NodeRef, aheadOf: string | undefined) =>
  onNode(
    node,
    'Normal',
    'Cordoned',
    `Node excluded from external load balancers and marked unschedulable${aheadOf ? ` (already cordoned ahead by the drain of ${aheadOf})` : ''}.`,
  );

export const cordonedAhead = (node: NodeRef, o: { instanceId: string; group: string; drainedInstance: string; drainedNode: string }) =>
  onNode(
    node,
    'Normal',
    'CordonedAhead',
    `Instance ${o.instanceId} is leaving group ${o.group} together with ${o.drainedInstance} (node ${o.drainedNode}): excluded from external load balancers and cordoned before that node's pods are evicted, so none lands here only to move again.`,
  );

export const drained = (node: NodeRef, seconds: number, evicted: number) => onNode(node, 'Normal', 'Drained', `All pods left the node in ${seconds} s (${evicted} evicted).`);

export const drainTimedOut = (node: NodeRef, o: { seconds: number; stuck: readonly string[]; policy: string }) =>
  onNode(node, 'Warning', 'DrainTimedOut', `Drain deadline reached after ${o.seconds} s; ${o.stuck.length} pod(s) did not leave by eviction: ${o.stuck.join(', ')}. ${o.policy}`);

// --- settle: volumes detached, load balancers let go ------------------------------------

/** A volume as Events name it: the PersistentVolume and the driver that attaches it. */
export interface VolumeRef {
  readonly persistentVolume: string;
  readonly attacher: string;
}
const volumeText = (v: VolumeRef) => `${v.persistentVolume} (${v.attacher})`;
const tookText = (x: { name: string; seconds: number }) => `${x.name} ${x.seconds} s`;

export const waitingForVolumeDetach = (node: NodeRef, volumes: readonly VolumeRef[]) =>
  onNode(node, 'Normal', 'WaitingForVolumeDetach', `Releasing the instance once ${volumes.length} volume(s) of departed pods are detached: ${listed(volumes.map(volumeText))}.`);

export const volumesDetached = (node: NodeRef, detached: readonly (VolumeRef & { seconds: number })[]) =>
  onNode(node, 'Normal', 'VolumesDetached', `${detached.length} volume(s) detached after the drain: ${listed(detached.map((v) => `${volumeText(v)} in ${v.seconds} s`))}.`);

export const volumesNotDetached = (node: NodeRef, left: readonly VolumeRef[], why: string) =>
  onNode(
    node,
    'Warning',
    'VolumesNotDetached',
    `Releasing the instance with ${left.length} volume(s) still attached (${why}): ${listed(left.map(volumeText))}. EC2 detaches them when the instance is gone; until then their pods' replacements cannot attach them.`,
  );

export const waitingForTargets = (node: NodeRef, holds: readonly { name: string; state: string }[]) =>
  onNode(
    node,
    'Normal',
    'WaitingForTargetDeregistration',
    `Releasing the instance once ${holds.length} load balancer(s) let it go: ${listed(holds.map((h) => `${h.name} (${h.state})`))}.`,
  );

export const targetsDeregistered = (node: NodeRef, took: readonly { name: string; seconds: number }[]) =>
  onNode(node, 'Normal', 'TargetsDeregistered', `Deregistered from ${took.length} load balancer(s) after the drain: ${listed(took.map(tookText))}.`);

export const targetsNotDeregistered = (node: NodeRef, holds: readonly { name: string; state: string }[], seconds: number) =>
  onNode(
    node,
    'Warning',
    'TargetsNotDeregistered',
    `Releasing the instance ${seconds} s after the drain (its longest wait) while ${holds.length} load balancer(s) still hold it: ${listed(holds.map((h) => `${h.name} (${h.state})`))}.`,
  );

export const lifecycleActionCompleted = (node: NodeRef, o: { verdict: 'CONTINUE' | 'ABANDON'; alreadyCompleted: boolean; seconds: number; outcome: string }) =>
  onNode(
    node,
    o.verdict === 'ABANDON' ? 'Warning' : 'Normal',
    'LifecycleActionCompleted',
    `Lifecycle action ${o.alreadyCompleted ? 'was already completed' : 'completed'} with ${o.verdict} ${o.seconds} s after the notification (${o.outcome}).`,
  );

export const spotInterruptionDrained = (node: NodeRef, seconds: number, outcome: string) =>
  onNode(node, 'Normal', 'SpotInterruptionDrained', `Drained ${seconds} s after the Spot interruption warning (${outcome}); EC2 reclaims the instance at the two-minute mark.`);

export const accessDenied = (node: NodeRef, verdict: 'CONTINUE' | 'ABANDON') =>
  onNode(node, 'Warning', 'DrainerAccessDenied', `The cluster refused the drainer (RBAC or access entry); lifecycle action completed with ${verdict} without draining.`);

// --- eviction ----------------------------------------------------------------------------

export const podRescheduledOnDrainingNode = (node: NodeRef, pod: PodRef) =>
  onNode(
    node,
    'Warning',
    'PodRescheduledOnDrainingNode',
    `Pod ${podKey(pod)} tolerates node.kubernetes.io/unschedulable and was scheduled back onto this draining node; it is not waited for and ends with the instance.`,
  );

export const podsNotWaitedFor = (node: NodeRef, pods: readonly string[], why: string) => onNode(node, 'Warning', 'PodsNotWaitedFor', `Not waiting for ${listed(pods)}: ${why}.`);

export const podForceDeleted = (node: NodeRef, pod: PodRef, graceSeconds: number, why: string): ClusterEvent[] => [
  onNode(node, 'Warning', 'PodForceDeleted', `Deleted pod ${podKey(pod)} with a ${graceSeconds} s grace period so it is gone by the drain deadline${why} (DEADLINE_POLICY=force).`),
  onPod(
    pod,
    'Warning',
    'PodForceDeleted',
    `Deleted with a ${graceSeconds} s grace period so it is gone by the drain deadline of node ${node.name}${why}; eviction could not succeed in time.`,
  ),
];

export const waitingForBatchPods = (node: NodeRef, pods: readonly string[], until: string) =>
  onNode(node, 'Normal', 'WaitingForBatchPods', `Not evicting ${pods.join(', ')} until they finish or ${until}; the rest of the node drains meanwhile.`);
export const podsSkippedByDrainRule = (node: NodeRef, pods: readonly string[]) =>
  onNode(node, 'Normal', 'PodsSkippedByDrainRule', `Leaving ${listed(pods)} running: their drain rule is Skip, so the node goes without them leaving first.`);

export const evictionBlocked = (node: NodeRef, pod: PodRef, what: string): ClusterEvent[] => [
  onPod(pod, 'Warning', 'EvictionBlocked', `Eviction for draining node ${node.name} is blocked: ${what}`),
  onNode(node, 'Warning', 'EvictionBlocked', `Eviction of pod ${podKey(pod)} is blocked: ${what}`),
];

export const evictionBlockedLong = (node: NodeRef, pod: PodRef, o: { budget: string; minutes: number; detail: string; replacements: string }) =>
  onNode(
    node,
    'Warning',
    'EvictionBlockedLong',
    `Eviction of ${podKey(pod)} has been refused by ${o.budget} for ${o.minutes} min: ${o.detail.replace(/\.$/, '')}.${o.replacements}`,
  );

// --- launch ------------------------------------------------------------------------------

export const launchAdmitted = (node: NodeRef) => onNode(node, 'Normal', 'LaunchAdmitted', 'Node joined Ready without startup taints; lifecycle action completed with CONTINUE.');

export const launchAbandoned = (node: NodeRef, reason: string) =>
  onNode(node, 'Warning', 'LaunchAbandoned', `Not healthy in time (${reason}); lifecycle action completed with ABANDON, Auto Scaling replaces the instance.`);

export const drainMarksRemoved = (node: NodeRef, removed: readonly string[], why: string) =>
  onNode(
    node,
    'Normal',
    'DrainMarksRemoved',
    `${why}; removed what our last drain set (${removed.length > 0 ? removed.join(', ') : 'only its annotations'}). Marks set by others are left as they are.`,
  );

// --- refresh -----------------------------------------------------------------------------

export const markedOutdated = (node: NodeRef, o: { refreshId: string; group: string; instanceId: string; desired: string; cordoned: boolean; taintKey: string }) =>
  onNode(
    node,
    'Normal',
    'MarkedOutdated',
    `Instance refresh ${o.refreshId} of group ${o.group} replaces instance ${o.instanceId} (desired: ${o.desired}): ${o.cordoned ? 'cordoned (strategy minimal)' : `tainted ${o.taintKey}:PreferNoSchedule, so evicted pods prefer new nodes`}.`,
  );

export const outdatedMarksRemoved = (node: NodeRef, o: { refreshId: string; group: string; why: string; removed: readonly string[] }) =>
  onNode(
    node,
    'Normal',
    'OutdatedMarksRemoved',
    `Instance refresh ${o.refreshId} of group ${o.group} ${o.why}: removed what it set (${o.removed.length > 0 ? o.removed.join(', ') : 'only its label'}).`,
  );

// --- migrate (the operator command) ---------------------------------------------------------

export const markedForMigration = (node: NodeRef, o: { id: string; from: string; to: string; cordoned: boolean; taintKey: string }) =>
  onNode(
    node,
    'Normal',
    'MarkedForMigration',
    `Migration ${o.id} moves group ${o.from} to ${o.to}: ${o.cordoned ? 'cordoned (--cordon-all)' : `tainted ${o.taintKey}:PreferNoSchedule, so evicted pods prefer the new group`}; its instance is terminated through the lifecycle hook.`,
  );

export const migrationMarksRemoved = (node: NodeRef, o: { id: string; why: string; removed: readonly string[] }) =>
  onNode(node, 'Normal', 'MigrationMarksRemoved', `Migration ${o.id} ${o.why}: removed what it set (${o.removed.length > 0 ? o.removed.join(', ') : 'only its label'}).`);

// --- reconcile ---------------------------------------------------------------------------

export const drainResumed = (node: NodeRef, minutes: number) =>
  onNode(
    node,
    'Warning',
    'DrainResumed',
    `The drain of this node made no progress for ${minutes} min while its lifecycle action was still waiting (its hand-off was lost); the reconciler handed it on again.`,
  );

// --- repair (repair/) ----------------------------------------------------------------------

/** A condition as Events name it: `NetworkingReady False (IPAMDNotReady) for 31 min`. */
export interface BadCondition {
  readonly condition: string;
  readonly status: string;
  readonly reason: string;
  readonly minutes: number;
  readonly ruleMinutes: number;
}
const badText = (b: BadCondition) => `${b.condition} ${b.status}${b.reason ? ` (${b.reason})` : ''} for ${b.minutes} min (rule: ${b.ruleMinutes} min)`;

export const repairReplacing = (node: NodeRef, bad: BadCondition, instanceId: string) =>
  onNode(
    node,
    'Warning',
    'RepairReplacing',
    `${badText(bad)}: instance ${instanceId} marked Unhealthy in Auto Scaling, which replaces it; the terminate hook drains this node first.`,
  );

export const repairRebooting = (node: NodeRef, bad: BadCondition) =>
  onNode(node, 'Warning', 'RepairRebooting', `${badText(bad)}: cordoned and draining; the instance is rebooted once its pods are gone or the drain deadline passes.`);

export const repairRebooted = (node: NodeRef, instanceId: string, left: number) =>
  onNode(node, 'Normal', 'RepairRebooted', `Instance ${instanceId} rebooted (${left} pod(s) were still on the node); the cordon is taken back once the node is healthy again.`);

export const repairRecovered = (node: NodeRef, seconds: number) =>
  onNode(node, 'Normal', 'RepairRecovered', `Healthy again ${seconds} s after the reboot: the cordon of the repair is taken back.`);

export const repairDeferred = (node: NodeRef, bad: BadCondition, o: { inFlight: number; limit: number }) =>
  onNode(node, 'Normal', 'RepairDeferred', `${badText(bad)}: waiting, ${o.inFlight} repair(s) in flight in its group and at most ${o.limit} in parallel.`);

export const repairHeld = (node: NodeRef, bad: BadCondition, why: string) => onNode(node, 'Warning', 'RepairHeld', `${badText(bad)}: not repaired, ${why}.`);

export const repairNoAction = (node: NodeRef, bad: BadCondition) => onNode(node, 'Normal', 'RepairNoAction', `${badText(bad)}: its rule's repair action is NoAction.`);

export const repairMarksRemoved = (node: NodeRef, why: string, uncordoned: boolean) =>
  onNode(node, 'Normal', 'RepairMarksRemoved', `The reconciler took back our repair record${uncordoned ? ' and its cordon' : ''}: ${why}.`);

/** MODE=observe: what the termination would have done on this node; nothing was changed. */
export function terminationObserved(node: NodeRef, what: string): ClusterEvent {
  return onNode(node, 'Normal', 'TerminationObserved', `Observe mode (MODE=observe), nothing was changed: ${what}`);
}

/** MODE=observe: this pod's eviction would be refused now (a budget, two budgets), and why. */
export function evictionWouldBeBlocked(pod: PodRef, why: string): ClusterEvent {
  return onPod(pod, 'Warning', 'EvictionWouldBeBlocked', `Observe mode (MODE=observe): draining this pod's node now would be held up: ${why}`);
}

// --- termination policy (termination-policy/) --------------------------------------------
/** Logged when the termination policy answers Auto Scaling's own suggestion because it could not decide; counted by TerminationPolicyFailedOpen. */
export const choiceFailedOpenMessage = "termination policy could not decide; answering Auto Scaling's own suggestion";

export const chosenForTermination = (node: NodeRef, cause: string, rank: number, of: number, why: string) =>
  onNode(node, 'Normal', 'ChosenForTermination', `Chosen for ${cause} (the cheapest departure: rank ${rank} of ${of}): ${why}.`);
export const passedOverForTermination = (node: NodeRef, cause: string, why: string) => onNode(node, 'Normal', 'PassedOverForTermination', `Not chosen for ${cause}: ${why}.`);

export const terminationDeferred = (node: NodeRef, cause: string, why: string, leftSeconds: number) =>
  onNode(node, 'Warning', 'TerminationDeferred', `${cause} deferred: ${why}. Past the maximum deferral (${leftSeconds} s from now) Auto Scaling's own choice stands.`);

export const terminationDeferralExpired = (node: NodeRef, cause: string, seconds: number) =>
  onNode(node, 'Warning', 'TerminationDeferralExpired', `${cause} deferred for ${seconds} s, the maximum (TERMINATION_DEFERRAL_MAX_SECONDS): Auto Scaling's own choice stands.`);

export const terminationChoiceObserved = (node: NodeRef, cause: string, what: string) =>
  onNode(node, 'Normal', 'TerminationChoiceObserved', `Observe mode: for ${cause} the termination policy ${what}; Auto Scaling's own suggestion was answered.`);

// --- after an undrained release ------------------------------------------------------------
export const outOfServiceTainted = (node: NodeRef, instanceId: string, pods: readonly string[]) =>
  onNode(
    node,
    'Warning',
    'OutOfServiceTainted',
    `EC2 says instance ${instanceId} is terminated and ${pods.length} pod(s) were still bound to this node (${listed([...pods])}): tainted node.kubernetes.io/out-of-service=nodeshutdown:NoExecute so they and their volumes go now.`,
  );

export const outOfServiceRemoved = (node: NodeRef) =>
  onNode(node, 'Normal', 'OutOfServiceRemoved', 'The node is Ready again, as another instance: our node.kubernetes.io/out-of-service taint was taken off.');
