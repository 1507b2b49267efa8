// The trigger of an Auto Scaling launch hook. A heartbeat of its own token confirms the
// launch is live before anything is read or written: a stale launch notification (an SQS
// redrive, a Lambda retry, a second rule) touches nothing, so it can never undo a drain in
// flight or uncordon a retained node.
import type { DeliveryOf } from '../inbound/deliveries.js';
import type { LifecycleNotification } from '../inbound/lifecycle-message.js';
import { lifecycleKeys, parseOurs } from '../inbound/lifecycle-scope.js';
import { asError } from '../shared/log.js';
import { confirmed, type RecordStatus, type Trigger, type TriggerContext } from '../trigger.js';
import { admitNode, admitUnchecked } from './admission.js';
import { giveNodeBack } from './give-back.js';

export const launchHook: Trigger<DeliveryOf<'launch'>, LifecycleNotification> = {
  takes: (d): d is DeliveryOf<'launch'> => d.kind === 'launch',
  parse: parseOurs,
  keys: lifecycleKeys,

  async confirm(n, { lifecycle, log }) {
    if ((await lifecycle.heartbeat(n)) === 'no-active-action') {
      log.warn('Auto Scaling has no active launch action for this notification; touching nothing');
      return { status: 'no-active-action' };
    }
    return confirmed(n);
  },

  // MODE=observe: no admission wait; the launch goes on as without this project.
  async observe(n, { lifecycle, log }) {
    const result = await lifecycle.complete(n, 'CONTINUE');
    log.info(
      'observe mode (MODE=observe): the launch would be admitted only once its node is Ready (ABANDON otherwise); ' +
        'completed CONTINUE at once',
      { completion: result },
    );
    return 'observed';
  },

  async act(n, ctx) {
    const status = await admit(n, ctx);
    ctx.metrics?.emit(
      { Transition: 'launching', Outcome: status.replace(/^launch-/, '') },
      {
        Launches: { unit: 'Count', value: 1 },
        SecondsSinceNotification: {
          unit: 'Seconds',
          value: Math.round((ctx.clock.now() - n.time.getTime()) / 100) / 10,
        },
      },
    );
    return status;
  },
};

async function admit(n: LifecycleNotification, ctx: TriggerContext): Promise<RecordStatus> {
  const { lifecycle, log, clock, config } = ctx;
  if (n.destination === 'WarmPool') {
    // Launched into the warm pool: Auto Scaling stops it next, and its user data often keeps
    // kubelet from joining. Nothing to admit; it is checked when it leaves the pool.
    const result = await lifecycle.complete(n, 'CONTINUE');
    log.info('launch into the warm pool: completed CONTINUE at once; admission runs when it leaves the pool', {
      completion: result,
    });
    return 'launch-into-warm-pool';
  }
  let cluster;
  try {
    cluster = await ctx.cluster();
  } catch (error) {
    await admitUnchecked(n, asError(error), { lifecycle, log });
    return 'launch-admitted-unchecked';
  }
  const now = clock.now();
  const outcome = await admitNode(
    {
      action: n,
      deadlineMs: n.time.getTime() + config.launchTimeoutSeconds * 1000,
      invocationStopMs: now + ctx.invocation.remainingMs() - config.invocationMarginSeconds * 1000,
    },
    {
      nodes: cluster,
      events: cluster,
      lifecycle,
      clock,
      log,
      giveBack: (node) =>
        giveNodeBack(n.instanceId, node, { nodes: cluster, instances: ctx.instances, events: cluster, log }),
    },
  );
  if (outcome !== 'continue-later') return `launch-${outcome}`;
  // Only when LAUNCH_TIMEOUT_SECONDS outlasts the invocation: do not hold the launch on our limit.
  log.warn('the invocation ends before the launch deadline; admitting the node unchecked');
  await lifecycle.complete(n, 'CONTINUE');
  return 'launch-admitted-unchecked';
}
