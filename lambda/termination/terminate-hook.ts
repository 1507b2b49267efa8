// The trigger of an Auto Scaling terminate hook (a notification, or a hand-off of ours that
// points at the same action). A heartbeat confirms the action is live and restarts the hook's
// timer: a forged or stale notification (group and hook names are no secret) gets "No active
// Lifecycle Action" and ends before any write, with no completion. It ends by completing the
// action; "No active Lifecycle Action" then means another delivery completed it or the hook
// timed out: done either way.
import type { ClusterGateway } from '../cluster/ports/cluster-gateway.js';
import { accessDenied, lifecycleActionCompleted } from '../cluster/events/termination-events.js';
import { accessDeniedMessage } from '../cluster/events/log-messages.js';
import { actionIdOfInstance, actionIdOfToken } from '../cluster/marks/action-id.js';
import type { DeliveryOf } from '../inbound/deliveries.js';
import { handOffMessage, type LifecycleNotification } from '../inbound/lifecycle-message.js';
import { lifecycleKeys, parseOurs } from '../inbound/lifecycle-scope.js';
import { actionCapSeconds } from '../shared/config.js';
import { undrainedVerdict } from '../shared/deadline-policy.js';
import { AccessDeniedError, ServiceBusyError } from '../shared/errors.js';
import { asError } from '../shared/log.js';
import { confirmed, type Confirmed, type Trigger, type TriggerContext } from '../trigger.js';
import { observeTermination } from './observe.js';
import { terminate } from './pipeline.js';
import { lifecycleDeadlines } from './deadlines.js';
import {
  secondsSince,
  terminateDeps,
  type Completion,
  type Ending,
  type TerminateReport,
  type TerminationRequest,
} from './state.js';

export const terminateHook: Trigger<DeliveryOf<'terminate'>, LifecycleNotification> = {
  takes: (d): d is DeliveryOf<'terminate'> => d.kind === 'terminate',
  parse: parseOurs,
  keys: lifecycleKeys,

  async confirm(n, ctx) {
    const { log } = ctx;
    let answer: 'recorded' | 'no-active-action';
    try {
      answer = await ctx.lifecycle.heartbeat(n);
    } catch (error) {
      if (error instanceof ServiceBusyError) return retryLater(n, ctx, error);
      throw error;
    }
    if (answer === 'no-active-action') {
      if (n.handOff !== undefined) {
        log.info('the lifecycle action is already over (completed or timed out); nothing left to do');
        return { status: 'superseded' };
      }
      log.warn('Auto Scaling has no active lifecycle action for this notification; not touching the cluster');
      return { status: 'no-active-action' };
    }
    log.info('lifecycle action verified (heartbeat recorded)');
    return confirmed(n);
  },

  // MODE=observe: what it would do, told; nothing changed; CONTINUE at once.
  observe: observeTermination,

  async act(n, ctx) {
    const cluster = await ctx.cluster();
    try {
      const report = await terminate(terminationRequest(n, ctx, cluster), terminateDeps(ctx, cluster));
      emitTermination(n, report, ctx);
      const awsCalls = countCalls(ctx, report);
      ctx.log.info('termination handled', {
        outcome: report.outcome,
        // `lifecycleAction` is the record's key for the action's id (lifecycle-scope.ts): the result has its own.
        completion: report.lifecycleAction,
        durationMs: report.durationMs,
        podsEvicted: report.evictedTotal,
        awsCalls,
      });
      return report.outcome;
    } catch (error) {
      if (error instanceof AccessDeniedError) await completeDenied(n, ctx, cluster, error);
      throw error;
    }
  },
};

function terminationRequest(
  n: Confirmed<LifecycleNotification>,
  ctx: TriggerContext,
  cluster: ClusterGateway,
): TerminationRequest {
  const { config, clock, handOffs } = ctx;
  const nowMs = clock.now();
  const invocationEndMs = nowMs + ctx.invocation.remainingMs();
  const hook = n.lifecycleHookName;
  return {
    instance: { instanceId: n.instanceId, group: n.autoScalingGroupName },
    // Without a token, the action is addressed by its instance: the reconciler resumed the drain.
    source:
      n.lifecycleActionToken !== undefined
        ? { kind: 'lifecycle-action', actionId: actionIdOfToken(n.lifecycleActionToken), hook }
        : { kind: 'resumed', actionId: actionIdOfInstance(n.instanceId), hook },
    notifiedAtMs: n.time.getTime(),
    handOff: n.handOff,
    requestId: ctx.invocation.requestId,
    deadlinesFrom: (notifiedAtMs) =>
      lifecycleDeadlines(config, { notifiedAtMs, nowMs, invocationEndMs, canHandOff: handOffs !== undefined }),
    settings: config,
    ending: lifecycleEnding(n, ctx, cluster),
    sendHandOff:
      handOffs === undefined
        ? undefined
        : async (next) => {
            if ((await ctx.lifecycle.heartbeat(n)) === 'no-active-action') return 'action-over';
            await handOffs.send(handOffMessage(n, { ...next, byReconciler: n.handOff?.byReconciler ?? false }));
            return 'sent';
          },
  };
}

/** How a termination a lifecycle hook asked for starts and ends: CONTINUE, or ABANDON to retain. */
export function lifecycleEnding(
  n: Pick<
    LifecycleNotification,
    'autoScalingGroupName' | 'lifecycleHookName' | 'lifecycleActionToken' | 'instanceId' | 'destination' | 'time'
  >,
  ctx: Pick<TriggerContext, 'lifecycle' | 'log' | 'clock'>,
  cluster: Pick<ClusterGateway, 'record'>,
): Ending {
  return {
    startedMessage: () =>
      n.destination === 'WarmPool'
        ? `Auto Scaling group ${n.autoScalingGroupName} is returning instance ${n.instanceId} to its warm pool; ` +
          `draining before it stops. Our marks are removed when it comes back.`
        : `Auto Scaling group ${n.autoScalingGroupName} is terminating instance ${n.instanceId}; draining before it ` +
          `goes.`,

    async finish(c: Completion) {
      const { autoScalingGroupName, lifecycleHookName, lifecycleActionToken, instanceId } = n;
      const result = await ctx.lifecycle.complete(
        { autoScalingGroupName, lifecycleHookName, lifecycleActionToken, instanceId },
        c.verdict,
      );
      if (result === 'already-completed')
        ctx.log.info('lifecycle action was already completed (duplicate delivery or timed out); nothing left to do');
      else ctx.log.info('lifecycle action completed', { result: c.verdict });
      if (c.node !== undefined && c.outcome !== 'node-not-found' && c.outcome !== 'node-gone') {
        const seconds = secondsSince(ctx.clock, c.node.drain?.notifiedAtMs ?? n.time.getTime());
        await cluster.record(
          lifecycleActionCompleted(c.node, {
            verdict: c.verdict,
            alreadyCompleted: result === 'already-completed',
            seconds,
            outcome: c.outcome,
          }),
        );
      }
      return result;
    },
  };
}

/**
 * Our own RBAC or access entry is wrong: holding the instance helps nobody, unless the
 * deployer chose to retain (then ABANDON keeps it, cordoned or not, with its pods).
 */
async function completeDenied(
  n: LifecycleNotification,
  ctx: TriggerContext,
  cluster: ClusterGateway,
  error: AccessDeniedError,
): Promise<void> {
  const verdict = undrainedVerdict(ctx.config.deadlinePolicy);
  ctx.log.error(accessDeniedMessage, { error, verdict });
  try {
    const result = await ctx.lifecycle.complete(n, verdict);
    ctx.log.warn('lifecycle action completed without draining', { completion: result, result: verdict });
    const node = await cluster.findNodeByInstanceId(n.instanceId).catch(() => undefined);
    if (node !== undefined) await cluster.record(accessDenied(node, verdict));
  } catch (completeError) {
    ctx.log.error('could not complete the lifecycle action either', asError(completeError));
  }
}

/**
 * Auto Scaling throttled the heartbeat through every retry: nothing is confirmed, so nothing
 * is written. Failing the invocation would leave the drain to Lambda's two retries; instead the
 * same notification goes again through the hand-off topic to a fresh invocation, which asks
 * again, while the action can still be alive (one heartbeat timeout since the notification).
 */
async function retryLater(
  n: LifecycleNotification,
  ctx: TriggerContext,
  error: ServiceBusyError,
): Promise<{ status: 'retried-later' }> {
  const { handOffs, config, log, clock } = ctx;
  // A first notification's action lives one heartbeat timeout unless heartbeated; a hand-off's
  // was heartbeated moments before it was sent (its Time is the first notification's), up to
  // the action's cap. Past that the heartbeat would say "no active action" anyway.
  const aliveSeconds =
    n.handOff !== undefined ? actionCapSeconds(config.heartbeatTimeoutSeconds) : config.heartbeatTimeoutSeconds;
  if (handOffs === undefined || secondsSince(clock, n.time.getTime()) > aliveSeconds) throw error;
  log.warn(
    'Auto Scaling throttled the heartbeat through every retry; sending the notification again to a fresh invocation',
    { error },
  );
  // The notification as it came (its hand-off too): a second delivery of it.
  await handOffs.send(handOffMessage(n, n.handOff));
  return { status: 'retried-later' };
}

/** This record's AWS calls, per service (the load balancers' counted by the settle phase). */
function countCalls(ctx: TriggerContext, report: TerminateReport): Record<string, number> {
  const calls = { ...ctx.awsCalls?.() };
  if (report.settle?.loadBalancerCalls) calls['elasticloadbalancing'] = report.settle.loadBalancerCalls;
  return calls;
}

/** Once per lifecycle action: by the invocation that completed it (or found it over). */
function emitTermination(n: LifecycleNotification, report: TerminateReport, ctx: TriggerContext): void {
  if (report.lifecycleAction === 'pending') return;
  ctx.metrics?.emit(
    { Transition: 'terminating', Outcome: report.outcome },
    {
      Terminations: { unit: 'Count', value: 1 },
      SecondsSinceNotification: { unit: 'Seconds', value: secondsSince(ctx.clock, n.time.getTime()) },
      PodsEvicted: { unit: 'Count', value: report.evictedTotal },
      EvictionsBlocked: { unit: 'Count', value: report.drain?.blocked ?? 0 },
      PodsForceDeleted: { unit: 'Count', value: report.drain?.forced ?? 0 },
      LoadBalancerCalls: { unit: 'Count', value: report.settle?.loadBalancerCalls ?? 0 },
      ...(report.settle?.volumeDetachSeconds !== undefined
        ? { VolumeDetachSeconds: { unit: 'Seconds', value: report.settle.volumeDetachSeconds } }
        : {}),
      ...(report.settle?.targetDeregistrationSeconds !== undefined
        ? { TargetDeregistrationSeconds: { unit: 'Seconds', value: report.settle.targetDeregistrationSeconds } }
        : {}),
    },
  );
}
