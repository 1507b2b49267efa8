// Auto Scaling's test notification, sent when a hook is created: proof the hook reaches us.
// It carries no action and asks for nothing, so confirming it asks AWS nothing.
import type { DeliveryOf } from '../inbound/deliveries.js';
import { confirmed, type Trigger } from '../trigger.js';

export const testNotification: Trigger<DeliveryOf<'test-notification'>, { readonly group: string | undefined }> = {
  takes: (d): d is DeliveryOf<'test-notification'> => d.kind === 'test-notification',
  parse: (d) => ({
    work: {
      group: typeof d.message['AutoScalingGroupName'] === 'string' ? d.message['AutoScalingGroupName'] : undefined,
    },
  }),
  keys: (w) => ({ autoScalingGroupName: w.group }),
  confirm: async (w) => confirmed(w),
  async act(_w, { log }) {
    log.info('Auto Scaling test notification received; the hook reaches this function');
    return 'test-notification';
  },
};
