// A termination's Run in the fake world, for the tests of one phase at a time.
import { defaultDrainRuleSettings } from '../../../lambda/cluster/rules/drain-rules.js';
import { actionIdOf } from '../../../lambda/cluster/marks/drain-record.js';
import { DeadlinePolicy } from '../../../lambda/shared/deadline-policy.js';
import type { Deadlines, Run, TerminationRequest, Verified } from '../../../lambda/termination/state.js';
import { lifecycleEnding } from '../../../lambda/termination/terminate-hook.js';
import type { LoadBalancerTargets } from '../../../lambda/shared/aws-ports.js';
import type { LoadBalancerSources } from '../../../lambda/cluster/ports/load-balancer-sources.js';
import {
  FakeAutoScaling,
  FakeClock,
  FakeCluster,
  FakeLifecycleActions,
  FakeLoadBalancers,
  MemoryLog,
} from '../../fakes/fake-world.js';

export const instanceId = 'i-0123456789abcdef0';
export const token = 'token-1';
export const action = {
  autoScalingGroupName: 'workers',
  lifecycleHookName: 'workers-terminate',
  lifecycleActionToken: token,
  instanceId,
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
    loadBalancers: undefined as LoadBalancerTargets | undefined,
    served: undefined as LoadBalancerSources | undefined,
  };
  const deadlines = (o: Partial<Deadlines> = {}): Deadlines => ({
    drainDeadlineMs: clock.now() + 300_000,
    latestDrainEndMs: clock.now() + 48 * 3600_000,
    invocationStopMs: Number.POSITIVE_INFINITY,
    minEvictionWindowMs: 0,
    loadBalancerDelayMs: 60_000,
    ...o,
  });
  const request = (o: Partial<TerminationRequest> = {}): TerminationRequest => ({
    action,
    actionId: actionIdOf(token),
    spot: false,
    notifiedAtMs: clock.now(),
    requestId: 'request-1',
    plan: () => deadlines(),
    deadlinePolicy: DeadlinePolicy.LEAVE,
    waitForVolumeDetach: true,
    blockedReportMs: 120_000,
    evictionConcurrency: 8,
    drainRules: defaultDrainRuleSettings,
    cordonDoomedSiblings: false,
    owner: 'gnt-test',
    ending: lifecycleEnding(
      { ...action, time: new Date(clock.now()), destination: undefined },
      { lifecycle, log, clock },
      cluster,
    ),
    ...o,
  });
  const run = (o: Partial<TerminationRequest> = {}): Run => ({ request: request(o), deps, startedMs: clock.now() });
  /** What verify hands on for the node, as found. */
  const verified = (name = 'node-a'): Verified => ({
    node: cluster.nodes.get(name)!,
    actionId: actionIdOf(token),
    claim: undefined,
    ownPendingClaim: undefined,
  });
  return { clock, cluster, lifecycle, log, autoScaling, loadBalancers, deps, deadlines, request, run, verified };
}
