// Observations as a soak run would record them, built by hand: each invariant's test plants its
// violation in one of these (test/soak/observations.ts) and shows the invariant finds it.
import type { AuditEntry } from '../../cluster/kube.js';
import type {
  ActionRecord,
  NodeRecord,
  NodeState,
  Observations,
  PodRecord,
  ReleaseSnapshot,
} from '../../soak/observations.js';
import type { SoakSettings } from '../../soak/scenario.js';

export const t0 = Date.parse('2026-11-29T10:00:00Z');
export const at = (seconds: number) => t0 + seconds * 1000;

export const settings: SoakSettings = {
  deadlinePolicy: 'force',
  drainTimeoutSeconds: 60,
  invocationSeconds: 20,
  invocationMarginSeconds: 5,
  heartbeatTimeoutSeconds: 750,
  reconcileIntervalMinutes: 1,
  batchWaitSeconds: 30,
  minEvictionWindowSeconds: 0,
  loadBalancerDelaySeconds: 3,
  loadBalancerMaxWaitSeconds: 30,
  surgeTimeoutSeconds: 30,
  evictDaemonSetPods: false,
  terminationDeferralMaxSeconds: 30,
  launchTimeoutSeconds: 60,
  targetDrainSeconds: 5,
};

export function state(o: Partial<NodeState> = {}): NodeState {
  return { unschedulable: false, labels: {}, annotations: {}, taints: [], conditions: [], ...o };
}

export function node(name: string, instanceId: string, o: Partial<NodeRecord> = {}): NodeRecord {
  return { name, instanceId, group: 'soak-a', initial: state(), final: state(), cordons: [], ...o };
}

export function pod(name: string, nodeName: string, o: Partial<PodRecord> = {}): PodRecord {
  return {
    uid: `uid-${name}`,
    namespace: 'soak-1',
    name,
    labels: {},
    annotations: {},
    ownerKind: 'ReplicaSet',
    createdMs: at(-100),
    node: nodeName,
    boundMs: at(-100),
    ready: [{ fromMs: at(-99) }],
    ...o,
  };
}

export function action(instanceId: string, o: Partial<ActionRecord> = {}): ActionRecord {
  return {
    token: `token-${instanceId}`,
    instanceId,
    group: 'soak-a',
    transition: 'terminate',
    openedMs: at(0),
    notifiedMs: at(0),
    notifiedSoakMs: at(0),
    firstInvokedMs: at(0.1),
    heartbeatsMs: [at(0.2)],
    completions: [{ atMs: at(50), result: 'CONTINUE', accepted: true }],
    ...o,
  };
}

export function audit(o: Partial<AuditEntry> & Pick<AuditEntry, 'verb' | 'resource'>): AuditEntry {
  return {
    user: 'drainer',
    groups: ['graceful-node-termination'],
    userAgent: 'graceful-node-termination',
    code: 200,
    message: '',
    subresource: undefined,
    namespace: undefined,
    name: undefined,
    requestURI: '/',
    requestObject: undefined,
    receivedMs: at(1),
    atMs: at(1),
    ...o,
  };
}

export const evictionOf = (p: PodRecord, seconds: number, code = 201): AuditEntry =>
  audit({
    verb: 'create',
    resource: 'pods',
    subresource: 'eviction',
    namespace: p.namespace,
    name: p.name,
    code,
    receivedMs: at(seconds),
    atMs: at(seconds),
  });

export function release(o: Partial<ReleaseSnapshot> = {}): ReleaseSnapshot {
  return {
    token: 'token-i-01',
    instanceId: 'i-01',
    node: 'n-1',
    atMs: at(50),
    result: 'CONTINUE',
    pods: [],
    volumeAttachments: [],
    targets: [{ targetGroup: 'k8s-soak-web', state: 'unused' }],
    events: [{ reason: 'Drained', message: '' }],
    ...o,
  };
}

/** One terminated instance i-01 (node n-1) and one that stays, i-02 (node n-2), nothing else. */
export function observations(o: Partial<Observations> = {}): Observations {
  return {
    settings,
    deploymentName: 'soak-1',
    namespace: 'soak-1',
    startMs: at(-120),
    endMs: at(300),
    endSoakMs: at(300),
    skips: [],
    audit: [],
    actions: [action('i-01')],
    releases: [release()],
    launchAbandons: [],
    pods: [],
    nodes: [node('n-1', 'i-01', { final: undefined, deletedMs: at(60) }), node('n-2', 'i-02')],
    events: [],
    policyCalls: [],
    spots: [],
    refreshes: [],
    instanceStates: [
      { instanceId: 'i-01', state: 'InService', atMs: at(-120) },
      { instanceId: 'i-02', state: 'InService', atMs: at(-120) },
      { instanceId: 'i-01', state: 'Terminating:Wait', atMs: at(0) },
      { instanceId: 'i-01', state: 'Terminating:Proceed', atMs: at(50) },
    ],
    targetReads: [{ atMs: at(45), answered: true }],
    surgeDeployments: [],
    ...o,
  };
}
