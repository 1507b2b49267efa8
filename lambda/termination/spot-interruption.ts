// The trigger of an EC2 Spot interruption warning: EC2 reclaims the instance two minutes after
// it, and no lifecycle action waits for us. Confirmed with Auto Scaling (which group is the
// instance in? only ours are drained) and EC2 (is it Spot, and did EC2 give it notice?); the warning's time is never
// trusted beyond what EC2 promises (two minutes from now at most; an expired warning is dropped). Drained at once with
// a deadline that ends before the two minutes are up and the configured policy (retain cannot keep a Spot instance: it
// deletes nothing, as leave).
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html
import { spotActionId } from '../cluster/marks/action-id.js';
import type { ClusterGateway } from '../cluster/ports/cluster-gateway.js';
import { spotInterruptionDrained } from '../cluster/events/termination-events.js';
import type { DeliveryOf } from '../inbound/deliveries.js';
import { instanceIdPattern } from '../inbound/lifecycle-message.js';
import { ServiceBusyError } from '../shared/errors.js';
import { asError } from '../shared/log.js';
import { confirmed, detailType, type Confirmed, type Trigger, type TriggerContext } from '../trigger.js';
import { terminate } from './pipeline.js';
import { secondsSince, terminateDeps, type Deadlines, type Ending, type TerminationRequest } from './state.js';

/** EC2's notice before it reclaims a Spot instance. */
export const spotWarningSeconds = 120;
/** The last seconds before a Spot reclaim, kept for load balancers to let the node go. */
export const spotSettleSeconds = 15;
const instanceActions: ReadonlySet<string> = new Set(['terminate', 'stop', 'hibernate']);

export interface SpotWarning {
  readonly instanceId: string;
  readonly instanceAction: string;
  /** The warning's time, never later than when we received it. */
  readonly warnedAtMs: number;
}

/** A warning Auto Scaling and EC2 confirmed: the instance's group is one we serve. */
export interface ConfirmedSpotWarning extends SpotWarning {
  readonly group: string;
}

export const spotInterruption: Trigger<DeliveryOf<'event'>, SpotWarning, ConfirmedSpotWarning> = {
  takes: detailType('EC2 Spot Instance Interruption Warning'),
  parse(d, { clock, log }) {
    const instanceId = d.detail['instance-id'];
    const action = d.detail['instance-action'];
    const timeMs = typeof d.time === 'string' ? Date.parse(d.time) : Number.NaN;
    const problem =
      d.source !== 'aws.ec2'
        ? { field: 'source', reason: `is ${JSON.stringify(d.source)}, expected aws.ec2` }
        : typeof instanceId !== 'string' || !instanceIdPattern.test(instanceId)
          ? { field: 'detail.instance-id', reason: `is ${JSON.stringify(instanceId)}, not an EC2 instance id` }
          : typeof action !== 'string' || !instanceActions.has(action)
            ? {
                field: 'detail.instance-action',
                reason: `is ${JSON.stringify(action)}, expected terminate, stop or hibernate`,
              }
            : Number.isNaN(timeMs)
              ? { field: 'time', reason: `is ${JSON.stringify(d.time)}, not an ISO 8601 time` }
              : undefined;
    if (problem !== undefined) {
      log.error('malformed Spot interruption warning', { ...problem, messageId: d.id });
      return { status: 'malformed' };
    }
    // A time in the future would extend the deadline past the reclaim: taken as now.
    const warnedAtMs = Math.min(timeMs, clock.now());
    if (clock.now() >= warnedAtMs + spotWarningSeconds * 1000) {
      log.warn('Spot interruption warning arrived after the instance was reclaimed; nothing left to drain', {
        instanceId,
        reclaimAt: new Date(warnedAtMs + spotWarningSeconds * 1000).toISOString(),
      });
      return { status: 'spot-warning-expired', instanceId: instanceId as string };
    }
    return { work: { instanceId: instanceId as string, instanceAction: action as string, warnedAtMs } };
  },

  keys: (w) => ({ instanceId: w.instanceId, transition: 'spot-interruption', instanceAction: w.instanceAction }),

  async confirm(w, { instances, ec2, clock, config, log }) {
    if (!config.spotInterruptions) {
      log.warn(
        'Spot interruption warning refused: this deployment does not drain on Spot warnings (SPOT_INTERRUPTIONS=false)',
      );
      return { status: 'refused' };
    }
    const group = (await instances.describe([w.instanceId])).get(w.instanceId)?.group;
    if (group === undefined || !config.autoScalingGroupNames.has(group)) {
      log.warn('Spot interruption warning refused: the instance is in no Auto Scaling group this deployment serves', {
        group: group ?? null,
      });
      return { status: 'refused' };
    }
    const refusal = await interruptionRefusal(w, { ec2, clock, log });
    if (refusal !== undefined) {
      log.warn(`Spot interruption warning refused: ${refusal.why}`, refusal.fields);
      return { status: 'refused' };
    }
    log.appendKeys?.({ autoScalingGroupName: group });
    return confirmed({ ...w, group });
  },

  async act(w, ctx) {
    const cluster = await ctx.cluster();
    const report = await terminate(spotRequest(w, ctx, cluster), terminateDeps(ctx, cluster));
    ctx.metrics?.emit(
      { Transition: 'spot-interruption', Outcome: report.outcome },
      {
        SpotInterruptions: { unit: 'Count', value: 1 },
        PodsEvicted: { unit: 'Count', value: report.evictedTotal },
        PodsForceDeleted: { unit: 'Count', value: report.drain?.forced ?? 0 },
      },
    );
    const reclaimAtMs = w.warnedAtMs + spotWarningSeconds * 1000;
    ctx.log.info('Spot interruption handled', {
      outcome: report.outcome,
      podsEvicted: report.evictedTotal,
      secondsBeforeReclaim: Math.round((reclaimAtMs - ctx.clock.now()) / 1000),
    });
    return report.outcome;
  },
};

/** The Spot request statuses of an instance EC2 means to keep; every other status follows a notice. */
const notInterrupted: ReadonlySet<string> = new Set(['fulfilled', 'request-canceled-and-instance-running']);
const statusReads = 3;
const statusReadIntervalMs = 2_000;

/**
 * Only EC2 interrupts a Spot instance, and it marks the instance's Spot request when it gives
 * notice (`marked-for-termination`, or at once `instance-terminated-no-capacity`); the request
 * is read a few times, seconds apart, in case the event outran it. Undefined: confirmed. When
 * EC2 cannot be asked at all (unreachable, not allowed) or does not know the instance, the
 * warning stands on Auto Scaling's word, as before: nobody who forges a warning can cause
 * that. EC2 throttling us or failing (5xx) anyone can cause, so then the warning is refused.
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-request-status.html
 */
async function interruptionRefusal(
  w: SpotWarning,
  { ec2, clock, log }: Pick<TriggerContext, 'ec2' | 'clock' | 'log'>,
): Promise<{ why: string; fields: Record<string, unknown> } | undefined> {
  try {
    const purchase = await ec2.purchase(w.instanceId);
    if (purchase === undefined) return undefined;
    if (purchase.lifecycle !== 'spot')
      return { why: 'EC2 does not run this instance as Spot', fields: { instanceLifecycle: purchase.lifecycle } };
    if (purchase.spotRequestId === undefined) return undefined;
    // Only the request's status moves; the instance is read once.
    for (let read = 1; ; read++) {
      const status = await ec2.spotRequestStatus(purchase.spotRequestId);
      if (status === undefined || !notInterrupted.has(status)) return undefined;
      if (read >= statusReads)
        return {
          why: 'EC2 has given this instance no interruption notice',
          fields: { spotRequestStatus: status, reads: read },
        };
      await clock.sleep(statusReadIntervalMs);
    }
  } catch (error) {
    // Throttled or failing: anyone who can spend the account's EC2 request rate can cause that.
    if (error instanceof ServiceBusyError)
      return {
        why: 'EC2 is busy and could not confirm it (throttled or failing)',
        fields: { error: asError(error).message },
      };
    log.warn(
      'could not ask EC2 whether this instance is Spot and was given notice; believing the warning on Auto ' +
        "Scaling's word",
      asError(error),
    );
    return undefined;
  }
}

/** Leave the last seconds to the load balancers: label first (mark), drain, then wait what is left. */
export function spotDeadlines(
  reclaimAtMs: number,
  loadBalancerDelaySeconds: number,
  wait?: { readonly minSeconds: number } | undefined,
): Deadlines {
  const drainEndMs = reclaimAtMs - spotSettleSeconds * 1000;
  const lastSeconds = spotSettleSeconds - 2;
  return {
    drainDeadlineMs: drainEndMs,
    latestDrainEndMs: drainEndMs,
    invocationStopMs: Number.POSITIVE_INFINITY,
    minEvictionWindowMs: 0,
    batch: undefined,
    loadBalancerDelayMs: Math.max(0, Math.min(loadBalancerDelaySeconds, lastSeconds)) * 1000,
    // Whatever the load balancers say, EC2 takes the instance at reclaimAtMs.
    loadBalancerWait: wait && { minMs: Math.min(wait.minSeconds, lastSeconds) * 1000, maxMs: lastSeconds * 1000 },
    settleEndMs: reclaimAtMs - 2000,
  };
}

function spotRequest(
  w: Confirmed<ConfirmedSpotWarning>,
  ctx: TriggerContext,
  cluster: ClusterGateway,
): TerminationRequest {
  const { config } = ctx;
  return {
    instance: { instanceId: w.instanceId, group: w.group },
    source: { kind: 'spot-interruption', actionId: spotActionId(w.instanceId) },
    notifiedAtMs: w.warnedAtMs,
    requestId: ctx.invocation.requestId,
    // A repeated warning keeps the first one's clock (the record's).
    deadlinesFrom: (notifiedAtMs) =>
      spotDeadlines(
        Math.min(notifiedAtMs, w.warnedAtMs) + spotWarningSeconds * 1000,
        config.loadBalancerDelaySeconds,
        config.waitForTargets ? { minSeconds: config.loadBalancerMinWaitSeconds } : undefined,
      ),
    settings: config,
    ending: spotEnding(w, ctx, cluster),
  };
}

function spotEnding(w: ConfirmedSpotWarning, ctx: TriggerContext, cluster: ClusterGateway): Ending {
  return {
    startedMessage: () =>
      `EC2 reclaims Spot instance ${w.instanceId} of group ${w.group} in two minutes (${w.instanceAction}); ` +
      `draining before it goes.`,
    async finish(c) {
      ctx.log.info('drained ahead of the Spot interruption; EC2 reclaims the instance', { outcome: c.outcome });
      if (c.node !== undefined && c.outcome !== 'node-not-found' && c.outcome !== 'node-gone') {
        await cluster.record(spotInterruptionDrained(c.node, secondsSince(ctx.clock, w.warnedAtMs), c.outcome));
      }
      return 'nothing-to-complete';
    },
  };
}
