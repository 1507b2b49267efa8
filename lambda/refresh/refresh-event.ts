// The trigger of an instance refresh's EventBridge events. Each is confirmed with
// DescribeInstanceRefreshes before anything is written: a Started event marks only while the
// refresh is pending or in progress, an ending event takes marks back only once it is really
// over, and both act only on the nodes of that refresh's group. Why these events and not "the
// first terminate of a refresh": a terminate notification does not say why the instance goes,
// and nothing would say that the refresh ended. The events are best effort; the reconciler
// takes back whatever a lost one leaves.
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/instance-refresh-eventbridge-events.html
import type { DeliveryOf } from '../inbound/deliveries.js';
import { confirmed, detailType, type Trigger, type TriggerContext } from '../trigger.js';
import { markOutdatedNodes, removeRefreshMarks } from './outdated-marks.js';

/** A rollback replaces the new instances with the old configuration: the forward refresh's marks go when it starts. */
const eventMeanings: Readonly<Record<string, 'started' | 'progress' | string>> = {
  'EC2 Auto Scaling Instance Refresh Started': 'started',
  'EC2 Auto Scaling Instance Refresh Checkpoint Reached': 'progress',
  'EC2 Auto Scaling Instance Refresh Succeeded': 'succeeded',
  'EC2 Auto Scaling Instance Refresh Failed': 'failed',
  'EC2 Auto Scaling Instance Refresh Cancelled': 'cancelled',
  'EC2 Auto Scaling Instance Refresh Rollback Started': 'rolling back',
  'EC2 Auto Scaling Instance Refresh Rollback Succeeded': 'rolled back',
  'EC2 Auto Scaling Instance Refresh Rollback Failed': 'rollback failed',
};

/** Statuses in which the forward refresh still owns its marks. */
export const activeRefreshStatuses: ReadonlySet<string> = new Set(['Pending', 'InProgress', 'Cancelling']);

export interface RefreshNotice {
  readonly group: string;
  readonly refreshId: string;
  /** 'started', 'progress', or how it ended. */
  readonly meaning: string;
  readonly detailType: string;
}

export const refreshEvent: Trigger<DeliveryOf<'event'>, RefreshNotice> = {
  takes: detailType(...Object.keys(eventMeanings)),
  parse(d, { config, log }) {
    const meaning = eventMeanings[d.detailType];
    const group = d.detail['AutoScalingGroupName'];
    const refreshId = d.detail['InstanceRefreshId'];
    const problem =
      meaning === undefined
        ? { field: 'detail-type', reason: `is ${JSON.stringify(d.detailType)}, not an instance refresh event we know` }
        : d.source !== 'aws.autoscaling'
          ? { field: 'source', reason: `is ${JSON.stringify(d.source)}, expected aws.autoscaling` }
          : typeof group !== 'string' || group === ''
            ? { field: 'detail.AutoScalingGroupName', reason: `is ${JSON.stringify(group)}, expected a group name` }
            : typeof refreshId !== 'string' || refreshId === ''
              ? {
                  field: 'detail.InstanceRefreshId',
                  reason: `is ${JSON.stringify(refreshId)}, expected an instance refresh id`,
                }
              : undefined;
    if (problem !== undefined) {
      log.error('malformed instance refresh event', { ...problem, messageId: d.id });
      return { status: 'malformed' };
    }
    if (!config.autoScalingGroupNames.has(group as string)) {
      log.warn('instance refresh event refused: the group is not one this deployment serves', { group });
      return { status: 'refused' };
    }
    if (meaning === 'progress') {
      log.info('instance refresh progress', {
        what: d.detailType,
        autoScalingGroupName: group,
        instanceRefreshId: refreshId,
      });
      return { status: 'refresh-progress' };
    }
    if (!config.markOutdatedOnRefresh) {
      log.info('instance refresh event: marking outdated nodes is off (MARK_OUTDATED_ON_REFRESH=false)', {
        event: meaning,
      });
      return { status: 'refresh-marks-off' };
    }
    return {
      work: { group: group as string, refreshId: refreshId as string, meaning: meaning!, detailType: d.detailType },
    };
  },

  keys: (r) => ({ autoScalingGroupName: r.group, instanceRefreshId: r.refreshId, event: r.meaning }),

  async confirm(r, { instances, log }) {
    const status = (await instances.refreshStatuses(r.group, [r.refreshId])).get(r.refreshId);
    if (r.meaning === 'started' && !(status === 'Pending' || status === 'InProgress')) {
      log.info('instance refresh Started event, but the refresh is not pending or in progress; nothing to mark', {
        status: status ?? 'unknown to Auto Scaling',
      });
      return { status: 'refresh-over' };
    }
    if (r.meaning !== 'started' && status !== undefined && activeRefreshStatuses.has(status)) {
      log.warn('instance refresh ending event, but Auto Scaling says the refresh is still active; its marks stay', {
        status,
      });
      return { status: 'refresh-still-active' };
    }
    return confirmed(r);
  },

  async act(r, ctx) {
    const cluster = await ctx.cluster();
    const deps = {
      nodes: cluster,
      events: cluster,
      instances: ctx.instances,
      clock: ctx.clock,
      log: ctx.log,
      owner: ctx.config.deploymentName,
    };
    if (r.meaning !== 'started') {
      await removeRefreshMarks(r.group, { refreshId: r.refreshId }, r.meaning, deps);
      return 'refresh-unmarked';
    }
    // A group has at most one active refresh: marks of any other one on its nodes are stale.
    await removeRefreshMarks(r.group, { keep: r.refreshId }, 'is over (another refresh of the group started)', deps);
    const { outcome } = await markOutdatedNodes(r.group, r.refreshId, deps);
    await unmarkIfEndedMeanwhile(r, ctx, deps);
    return outcome === 'marked'
      ? 'refresh-marked'
      : outcome === 'refresh-over'
        ? 'refresh-over'
        : 'refresh-nothing-outdated';
  },
};

/**
 * Marking many nodes takes a while; an ending event handled meanwhile found only the nodes
 * marked so far. Asked again after marking: if the refresh is over by now, its marks go.
 */
async function unmarkIfEndedMeanwhile(
  r: RefreshNotice,
  ctx: TriggerContext,
  deps: Parameters<typeof removeRefreshMarks>[3],
): Promise<void> {
  const status = (await ctx.instances.refreshStatuses(r.group, [r.refreshId])).get(r.refreshId);
  if (status === 'Pending' || status === 'InProgress') return;
  ctx.log.info('the instance refresh ended while its nodes were being marked; taking the marks back', {
    status: status ?? 'unknown',
  });
  await removeRefreshMarks(
    r.group,
    { refreshId: r.refreshId },
    `ended (${status ?? 'unknown'}) while its Started event was handled`,
    deps,
  );
}
