// MODE=observe for a terminate hook: the notification is verified as usual (confirm), then what
// the termination would do is worked out from the cluster as it is and told, as an Event on the
// node (and one on each pod whose eviction would be held up) and a log line; nothing else is
// written, no sibling is marked, and the lifecycle action completes CONTINUE at once. A rollout
// can run like this for a week and read what it would have done (docs/observe-mode.md).
import type { ClusterGateway } from '../cluster/ports/cluster-gateway.js';
import type { PodInfo } from '../cluster/model.js';
import type { Finding } from '../cluster/ports/drainability-gateway.js';
import { evictionWouldBeBlocked } from '../cluster/events/eviction-events.js';
import { listed } from '../cluster/events/event-shapes.js';
import { terminationObserved } from '../cluster/events/termination-events.js';
import { drainPlan, isEvicted, waitsUntilDeadline } from '../cluster/rules/drain-plan.js';
import { isTerminating, podKey } from '../cluster/rules/pods.js';

import { describeSurges, leavingWith, observeSurges, type ObservedSurge } from './observe-surges.js';
import type { LifecycleNotification } from '../inbound/lifecycle-message.js';
import { asError } from '../shared/log.js';
import { withinBudget } from '../shared/time-budget.js';
import type { Confirmed, RecordStatus, TriggerContext } from '../trigger.js';
import { settleReserveSeconds } from './deadlines.js';
import { surveyPatienceMs } from './siblings.js';

export interface ObservedPlan {
  readonly node: string | undefined;
  /** Pods in the order they would be evicted (critical ones last). */
  readonly evict: readonly string[];
  /** Jobs, do-not-disrupt and WaitCompleted pods: waited for first. */
  readonly waitFor: readonly string[];
  /** Of waitFor, those never evicted (Cluster API's WaitCompleted): waited for until the drain deadline. */
  readonly waitUntilDeadline?: readonly string[] | undefined;
  /** Pods a user's drain rule leaves running (Skip). */
  readonly leave?: readonly string[] | undefined;
  /** What would hold an eviction up now (budgets), by pod. */
  readonly blocked: readonly { readonly pod: string; readonly why: string; readonly budget?: string | undefined }[];
  /** The group's other leaving instances, whose nodes would be cordoned first. */
  readonly siblings: readonly string[];
  /** The pods that would leave, as read once (the Events on blocked ones name them). */
  readonly pods: readonly PodInfo[];
  /** With SURGE_BEFORE_EVICT: the pods whose Deployment would be restarted first, or the refusal. */
  readonly surges?: readonly ObservedSurge[] | undefined;
}

export async function observeTermination(
  n: Confirmed<LifecycleNotification>,
  ctx: TriggerContext,
): Promise<RecordStatus> {
  const cluster = await ctx.cluster();
  const node = await cluster.findNodeByInstanceId(n.instanceId);
  const plan = node === undefined ? undefined : await planOf(cluster, node.name, n, ctx);
  const what =
    plan === undefined ? 'no node of this instance was found: the drain would end at once' : describe(plan, ctx);
  // Counts beside the lists: a Logs Insights query sums them over a week (docs/observe-mode.md).
  const counts = plan && {
    podsToEvict: plan.evict.length,
    podsToWaitFor: plan.waitFor.length,
    blockedPods: plan.blocked.length,
    blockedBy: [...new Set(plan.blocked.map((b) => b.budget))].join(','),
    siblingsToCordon: plan.siblings.length,
    podsToSurge: plan.surges?.filter((s) => s.verdict === 'surge').length ?? 0,
  };
  const told = plan && {
    node: plan.node,
    evict: plan.evict,
    waitFor: plan.waitFor,
    blocked: plan.blocked,
    siblings: plan.siblings,
    surges: plan.surges,
  };
  ctx.log.info('observe mode: what the termination would do', {
    ...(told ?? { node: null }),
    ...counts,
    waits: waits(ctx),
  });
  if (node !== undefined && plan !== undefined) {
    await cluster.record(terminationObserved(node, `${what} The lifecycle action completes CONTINUE now.`));
    for (const b of plan.blocked) {
      const pod = plan.pods.find((p) => podKey(p) === b.pod);
      if (pod !== undefined) await cluster.record(evictionWouldBeBlocked(pod, b.why));
    }
  }
  const result = await ctx.lifecycle.complete(n, 'CONTINUE');
  ctx.log.info('observe mode: lifecycle action completed CONTINUE without draining', { completion: result });
  ctx.metrics?.emit(
    { Transition: 'terminating', Outcome: 'observed' },
    {
      Terminations: { unit: 'Count', value: 1 },
      EvictionsBlocked: { unit: 'Count', value: plan?.blocked.length ?? 0 },
    },
  );
  return 'observed';
}

async function podsOf(cluster: ClusterGateway, nodeName: string): Promise<readonly PodInfo[]> {
  const watch = await cluster.watchPodsOnNode(nodeName);
  try {
    return watch.current();
  } finally {
    watch.close();
  }
}

async function planOf(
  cluster: ClusterGateway,
  nodeName: string,
  n: LifecycleNotification,
  ctx: TriggerContext,
): Promise<ObservedPlan> {
  const plan = drainPlan(
    (await podsOf(cluster, nodeName)).filter((p) => !isTerminating(p)),
    ctx.config,
    ctx.clock.now(),
  );
  const pods = [...plan.evict, ...plan.waitFor].map(({ pod }) => pod);
  const evict = plan.evict.map(({ pod }) => pod);
  const leave = plan.leave.map(({ pod }) => podKey(pod));
  const findings: readonly Finding[] = await cluster.drainability([nodeName]).catch((error: unknown) => {
    ctx.log.warn('observe mode: could not work out what would block the evictions', asError(error));
    return [];
  });
  // Only pods the drain would evict can be held up by their budgets (never Skip or Cluster API's WaitCompleted ones).
  const evicted = new Set(pods.filter((p) => isEvicted(plan.ruleOf(p))).map(podKey));
  const blocked = findings
    .filter((f) => f.severity !== 'info' && f.budget !== undefined && evicted.has(f.pod))
    .map((f) => ({ pod: f.pod, why: f.why, budget: f.budget }));
  const waitUntilDeadline = plan.waitFor.filter(({ rule }) => waitsUntilDeadline(rule)).map(({ pod }) => podKey(pod));
  const siblings = await siblingsOf(n, ctx);
  const leaving = () => leavingWith(cluster, nodeName, siblings, ctx.config.deploymentName, ctx.log);
  const surges = await observeSurges(cluster, evict, {
    settings: ctx.config.surge,
    leaving,
    clock: ctx.clock,
    log: ctx.log,
  });
  return {
    node: nodeName,
    evict: evict.map(podKey),
    waitFor: plan.waitFor.map(({ pod }) => podKey(pod)),
    waitUntilDeadline,
    leave,
    blocked,
    siblings,
    pods,
    surges,
  };
}

/** The group's other leaving instances, as the sibling survey would ask (best effort, its short budget). */
async function siblingsOf(n: LifecycleNotification, ctx: TriggerContext): Promise<readonly string[]> {
  if (!ctx.config.cordonDoomedSiblings) return [];
  try {
    const leaving = await withinBudget(ctx.clock.now() + surveyPatienceMs, () =>
      ctx.instances.leavingGroup(n.autoScalingGroupName),
    );
    return leaving.filter((id) => id !== n.instanceId);
  } catch (error) {
    ctx.log.warn("observe mode: could not look up the group's other leaving instances", asError(error));
    return [];
  }
}

function waits(ctx: TriggerContext): Record<string, number | string> {
  const c = ctx.config;
  return {
    drainTimeoutSeconds: c.drainTimeoutSeconds,
    batchWaitSeconds: c.batchWaitSeconds,
    deadlinePolicy: c.deadlinePolicy,
    settle: c.waitForTargets
      ? `${c.loadBalancerMinWaitSeconds}-${c.loadBalancerMaxWaitSeconds} s for load balancers`
      : `${c.loadBalancerDelaySeconds} s`,
    settleReserveSeconds: settleReserveSeconds(c),
  };
}

function describe(plan: ObservedPlan, ctx: TriggerContext): string {
  const c = ctx.config;
  const untilDeadline = plan.waitUntilDeadline ?? [];
  const bounded = plan.waitFor.filter((p) => !untilDeadline.includes(p));
  const settleWait = c.waitForTargets
    ? `${c.loadBalancerMinWaitSeconds} to ${c.loadBalancerMaxWaitSeconds} s`
    : `${c.loadBalancerDelaySeconds} s`;
  const parts = [
    `would label this node out of external load balancers and cordon it`,
    plan.siblings.length > 0
      ? `cordon the nodes of the group's ${plan.siblings.length} other leaving instance(s) ` +
        `(${listed(plan.siblings)}) first`
      : undefined,
    bounded.length > 0 ? `wait up to ${c.batchWaitSeconds} s for ${listed(bounded)} to finish` : undefined,
    untilDeadline.length > 0
      ? `never evict ${listed(untilDeadline)} (WaitCompleted): wait for them to finish until the drain deadline`
      : undefined,
    plan.evict.length > 0 ? `evict, in this order: ${listed(plan.evict)}` : 'evict nothing (no pod to move)',
    describeSurges(plan.surges ?? []),
    plan.leave !== undefined && plan.leave.length > 0
      ? `leave ${listed(plan.leave)} running (drain rule Skip)`
      : undefined,
    plan.blocked.length > 0
      ? `held up now: ${plan.blocked.map((b) => `${b.pod} by PodDisruptionBudget ${b.budget}`).join('; ')}`
      : undefined,
    `within ${c.drainTimeoutSeconds} s (then DEADLINE_POLICY=${c.deadlinePolicy}), then wait ${settleWait} ` +
      'for the load balancers and for its volumes to detach.',
  ];
  return `${parts.filter((p) => p !== undefined).join('; ')}`;
}
