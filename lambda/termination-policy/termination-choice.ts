// Auto Scaling asks which instances to terminate (a custom termination policy): the trigger of
// that call. Confirm-first like every trigger: the payload's group must be served and Auto
// Scaling must describe the instances as in it and in service; then decide.ts ranks them.
// The router answers Auto Scaling's own suggestion whenever this cannot decide in time.
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/lambda-custom-termination-policy.html
import type { DeliveryOf } from '../inbound/deliveries.js';
import { confirmed, type Trigger } from '../trigger.js';
import { decide, type ChoiceWork } from './decide.js';
import { parseChoiceRequest, suggestedIds } from './payload.js';

/**
 * Auto Scaling gives a termination policy two seconds (the documented maximum run time, a cold start included); the
 * answer is due by then, including the Events written before it. Reads stop at this point.
 */
export const answerWithinMs = 1_000;
/** At most this many of Auto Scaling's suggestions are ranked (two DescribeAutoScalingInstances calls). */
export const maxCandidates = 100;

export const terminationChoice: Trigger<DeliveryOf<'termination-choice'>, ChoiceWork> = {
  takes: (d): d is DeliveryOf<'termination-choice'> => d.kind === 'termination-choice',
  parse(d, { log, clock }) {
    const parsed = parseChoiceRequest(d.payload);
    if (!parsed.ok) {
      log.error("malformed termination policy request; answering Auto Scaling's own suggestion", {
        field: parsed.field,
        reason: parsed.reason,
      });
      return { status: 'malformed' };
    }
    return {
      work: { request: parsed.request, fallback: suggestedIds(d.payload), answerByMs: clock.now() + answerWithinMs },
    };
  },
  keys: (w) => ({ group: w.request.group, cause: w.request.cause, transition: 'termination-policy' }),
  async confirm(w, { config, instances, log }) {
    const { group } = w.request;
    if (!config.autoScalingGroupNames.has(group)) {
      log.error(
        "termination policy called for a group this deployment does not serve; answering Auto Scaling's own suggestion",
        { group },
      );
      return { status: 'refused' };
    }
    const ranked = w.request.suggested.slice(0, maxCandidates);
    const states = await instances.describe(ranked.map((s) => s.instanceId));
    const live = ranked.filter(
      (s) => states.get(s.instanceId)?.group === group && states.get(s.instanceId)?.lifecycleState === 'InService',
    );
    if (live.length < ranked.length)
      log.info('suggested instances Auto Scaling does not describe as in service in the group are not ranked', {
        left: ranked.length - live.length,
      });
    if (live.length === 0) {
      log.warn("no suggested instance is in service in the group; answering Auto Scaling's own suggestion");
      return { status: 'refused' };
    }
    return confirmed({ ...w, request: { ...w.request, suggested: live } });
  },
  act: (w, ctx) => decide(w, ctx, false),
  observe: (w, ctx) => decide(w, ctx, true),
};
