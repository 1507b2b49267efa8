// EC2 says a Spot instance is at elevated risk of interruption. With Capacity Rebalancing on,
// the group launches a replacement and then terminates this instance through its terminate
// hook, which drains it: nothing to do here but count it, for instances of our groups only.
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/rebalance-recommendations.html
import type { DeliveryOf } from '../inbound/deliveries.js';
import { instanceIdPattern } from '../inbound/lifecycle-message.js';
import { confirmed, detailType, type Trigger } from '../trigger.js';

export const rebalanceRecommendation: Trigger<
  DeliveryOf<'event'>,
  { readonly instanceId: string; readonly time: string }
> = {
  takes: detailType('EC2 Instance Rebalance Recommendation'),
  parse(d, { log }) {
    const instanceId = d.detail['instance-id'];
    if (typeof instanceId !== 'string' || !instanceIdPattern.test(instanceId)) {
      log.error('malformed rebalance recommendation', {
        field: 'detail.instance-id',
        reason: `is ${JSON.stringify(instanceId)}, not an EC2 instance id`,
        messageId: d.id,
      });
      return { status: 'malformed' };
    }
    // Logged as EventBridge wrote it; anything else (a queue carries any JSON) as its JSON, never String() of an
    // object, which throws for one whose toString is not a function.
    return { work: { instanceId, time: typeof d.time === 'string' ? d.time : (JSON.stringify(d.time) ?? '') } };
  },
  keys: (w) => ({ instanceId: w.instanceId, transition: 'rebalance-recommendation' }),
  async confirm(w, { instances, config, log }) {
    const group = (await instances.describe([w.instanceId])).get(w.instanceId)?.group;
    if (group === undefined || !config.autoScalingGroupNames.has(group)) {
      log.info('rebalance recommendation for an instance of no group this deployment serves; ignored', {
        group: group ?? null,
      });
      return { status: 'refused' };
    }
    return confirmed(w);
  },
  async act(w, { log, metrics }) {
    log.info('EC2 rebalance recommendation: the instance is at elevated risk of a Spot interruption', { time: w.time });
    metrics?.emit(
      { Transition: 'rebalance-recommendation', Outcome: 'logged' },
      { RebalanceRecommendations: { unit: 'Count', value: 1 } },
    );
    return 'rebalance-recommendation';
  },
};
