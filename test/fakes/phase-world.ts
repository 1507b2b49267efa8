// A termination's Run in the fake world, for the tests of one phase at a time.
import { actionIdOfToken } from '../../lambda/cluster/marks/action-id.js';
import type { DrainSource } from '../../lambda/cluster/model.js';
import { DeadlinePolicy } from '../../lambda/shared/deadline-policy.js';
import type {
  Deadlines,
  Run,
  TerminationRequest,
  TerminationSettings,
  Verified,
} from '../../lambda/termination/state.js';
import { lifecycleEnding } from '../../lambda/termination/terminate-hook.js';
import type { LoadBalancerRegistry, LoadBalancerTargets } from '../../lambda/shared/aws-ports.js';
import type { TargetReadingsSource } from '../../lambda/cluster/ports/target-readings.js';
import type { LoadBalancerSources } from '../../lambda/cluster/ports/load-balancer-sources.js';
import {
  FakeAutoScaling,
  FakeClock,
  FakeCluster,
  FakeLifecycleActions,
  FakeLoadBalancers,
  MemoryLog,
} from './fake-world.js';

export const instanceId = 'i-0123456789abcdef0';
export const token = 'token-1';
export const action = {
  autoScalingGroupName: 'workers',
  lifecycleHookName: 'workers-terminate',
  lifecycleActionToken: token,
  instanceId,
};

/** The source of the action above: a lifecycle action of the hook, by a hash of its token. */
export const lifecycleSource = {
  kind: 'lifecycle-action',
  actionId: actionIdOfToken(token),
  hook: action.lifecycleHookName,
} as const satisfies DrainSource;

/** A request with some fields and some settings of its own; the rest as the world's defaults. */
export type RequestOverrides = Omit<Partial<TerminationRequest>, 'settings'> & {
  readonly settings?: Partial<TerminationSettings>;
};

const requestKeys: ReadonlySet<string> = new Set([
  'instance',
  'source',
  'notifiedAtMs',
  'handOff',
  'requestId',
  'deadlinesFrom',
  'settings',
  'ending',
  'sendHandOff',
] satisfies (keyof TerminationRequest)[]);

export const testSettings: TerminationSettings = {
  deadlinePolicy: DeadlinePolicy.LEAVE,
  waitForVolumeDetach: true,
  blockedReportSeconds: 120,
  evictionConcurrency: 8,
  drainRules: [],
  evictDaemonSetPods: false,
  cordonDoomedSiblings: false,
  surge: undefined,
  deploymentName: 'gnt-test',
};

export function phaseWorld() {
  const clock = new FakeClock();
  const cluster = new FakeCluster(clock);
  const lifecycle = new FakeLifecycleActions(clock);
  const log = new MemoryLog();
  const autoScaling = new FakeAutoScaling();
  const loadBalancers = new FakeLoadBalancers(clock);
  // loadBalancers: set it (deps.loadBalancers = loadBalancers) where a test reads them.
  const deps = {
    nodes: cluster,
    pods: cluster,
    events: cluster,
    volumes: cluster,
    lifecycle,
    clock,
    log,
    instances: autoScaling,
    loadBalancers: undefined as (LoadBalancerTargets & Partial<LoadBalancerRegistry>) | undefined,
    served: undefined as LoadBalancerSources | undefined,
    readings: undefined as TargetReadingsSource | undefined,
  };
  const deadlines = (o: Partial<Deadlines> = {}): Deadlines => ({
    drainDeadlineMs: clock.now() + 300_000,
    latestDrainEndMs: clock.now() + 48 * 3600_000,
    invocationStopMs: Number.POSITIVE_INFINITY,
    minEvictionWindowMs: 0,
    loadBalancerDelayMs: 60_000,
    ...o,
  });
  const request = (o: RequestOverrides = {}): TerminationRequest => {
    // An override the request does not have would be dropped without a word: a test would run other than it says.
    const unknown = Object.keys(o).filter((k) => !requestKeys.has(k));
    if (unknown.length > 0) throw new Error(`not a TerminationRequest field: ${unknown.join(', ')}`);
    return requestOf(o);
  };
  const requestOf = (o: RequestOverrides): TerminationRequest => ({
    instance: { instanceId: action.instanceId, group: action.autoScalingGroupName },
    source: lifecycleSource,
    notifiedAtMs: clock.now(),
    requestId: 'request-1',
    deadlinesFrom: () => deadlines(),
    ending: lifecycleEnding(
      { ...action, time: new Date(clock.now()), destination: undefined },
      { lifecycle, log, clock },
      cluster,
    ),
    ...o,
    settings: { ...testSettings, ...o.settings },
  });
  const run = (o: RequestOverrides = {}): Run => ({ request: request(o), deps, startedMs: clock.now() });
  /** What verify hands on for the node, as found. */
  const verified = (name = 'node-a'): Verified => ({
    node: cluster.nodes.get(name)!,
    claim: undefined,
    ownPendingClaim: undefined,
  });
  return { clock, cluster, lifecycle, log, autoScaling, loadBalancers, deps, deadlines, request, run, verified };
}
