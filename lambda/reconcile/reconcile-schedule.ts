// The trigger of the reconciler: EventBridge's scheduled event (the construct's schedule,
// every 5 minutes by default). One invocation is one pass. A scheduled event carries no
// authority: a forged one can at most cause one more pass, and a pass takes back only what
// Auto Scaling confirms no live owner holds (owners.ts), each write conditional on the node as
// read. https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-run-lambda-schedule.html
import type { DeliveryOf } from '../inbound/deliveries.js';
import { confirmed, detailType, type Trigger } from '../trigger.js';
import { repairOnSchedule } from '../repair/repair-schedule.js';
import { reconcile } from './reconcile.js';
import { forgetReadings } from './reading-leases.js';

export interface Schedule {
  readonly rule: string | undefined;
}

export const reconcileSchedule: Trigger<DeliveryOf<'event'>, Schedule> = {
  // https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-run-lambda-schedule.html
  takes: detailType('Scheduled Event'),
  parse(d, { config, log }) {
    if (d.source !== 'aws.events') {
      log.error('malformed scheduled event', {
        field: 'source',
        reason: `is ${JSON.stringify(d.source)}, expected aws.events`,
        messageId: d.id,
      });
      return { status: 'malformed' };
    }
    if (!config.reconcileMarks) {
      log.info('scheduled event ignored: reconciling marks is off (RECONCILE_MARKS=false)');
      return { status: 'reconcile-off' };
    }
    return {
      work: { rule: Array.isArray(d.resources) && typeof d.resources[0] === 'string' ? d.resources[0] : undefined },
    };
  },

  keys: (s) => ({ transition: 'reconcile', rule: s.rule }),

  // Nothing here is taken on the event's word: each owner is asked in the pass itself.
  confirm: async (s) => confirmed(s),

  async act(_s, ctx) {
    const started = ctx.clock.now();
    const cluster = await ctx.cluster();
    const report = await reconcile({
      cluster,
      instances: ctx.instances,
      lifecycle: ctx.lifecycle,
      handOffs: ctx.handOffs,
      repairs: ctx.repairs,
      config: ctx.config,
      clock: ctx.clock,
      log: ctx.log,
    });
    ctx.metrics?.emit(
      { Transition: 'reconcile', Outcome: 'reconciled' },
      {
        MarkedNodes: { unit: 'Count', value: report.markedNodes },
        StaleMarksRemoved: { unit: 'Count', value: staleMarksRemoved(report) },
        DrainsResumed: { unit: 'Count', value: report.drainsResumed.length },
        StaleTagsRemoved: { unit: 'Count', value: report.tagsRemoved.length },
      },
    );
    const readingsForgotten = (await forgetReadings(cluster, ctx)).length;
    ctx.log.info('reconcile pass', { ...report, readingsForgotten, durationMs: ctx.clock.now() - started });
    await repairOnSchedule(ctx);
    return 'reconciled';
  },
};

/** Every mark of ours the pass took back, whoever set it. */
function staleMarksRemoved(r: {
  readonly [
    K in 'drainMarksRemoved' | 'refreshMarksRemoved' | 'repairMarksRemoved' | 'migrationMarksRemoved'
  ]: readonly string[];
}): number {
  return (
    r.drainMarksRemoved.length +
    r.refreshMarksRemoved.length +
    r.repairMarksRemoved.length +
    r.migrationMarksRemoved.length
  );
}
