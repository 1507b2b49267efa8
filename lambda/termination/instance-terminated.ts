// EC2 says an instance is terminated. When it was one of our served groups' and our drain had
// released it with pods still on its node (a deadline under force or leave, a Spot reclaim, a
// lost action), those pods stay Terminating and their volumes attached until the Node object
// goes; the out-of-service taint lets them go at once. Only after EC2 confirms the termination
// (never on an event's word, never while the instance runs), only on a node our drain marked.
// https://kubernetes.io/docs/concepts/cluster-administration/node-shutdown/#non-graceful-node-shutdown
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instance-state-changes.html
import type { ClusterGateway } from '../cluster/ports/cluster-gateway.js';
import type { NodeInfo } from '../cluster/model.js';
import { outOfServiceRemoved, outOfServiceTainted } from '../cluster/events/mark-events.js';
import { instanceMatches } from '../cluster/rules/provider-id.js';
import type { DeliveryOf } from '../inbound/deliveries.js';
import { instanceIdPattern } from '../inbound/lifecycle-message.js';
import type { Log } from '../shared/log.js';
import { confirmed, detailType, type Trigger } from '../trigger.js';

interface Terminated {
  readonly instanceId: string;
  readonly group?: string;
}

export const instanceTerminated: Trigger<DeliveryOf<'event'>, Terminated> = {
  takes: detailType('EC2 Instance State-change Notification'),
  parse(d, { log, config }) {
    const instanceId = d.detail['instance-id'];
    if (typeof instanceId !== 'string' || !instanceIdPattern.test(instanceId)) {
      log.error('malformed instance state-change event', {
        field: 'detail.instance-id',
        reason: `is ${JSON.stringify(instanceId)}, not an EC2 instance id`,
      });
      return { status: 'malformed' };
    }
    if (d.detail['state'] !== 'terminated' || !config.outOfServiceAfterRelease)
      return { status: 'refused', instanceId };
    return { work: { instanceId } };
  },
  keys: (w) => ({ instanceId: w.instanceId, transition: 'instance-terminated' }),
  async confirm(w, { ec2, config, log }) {
    const state = (await ec2.runStates?.([w.instanceId]))?.get(w.instanceId);
    if (state?.state !== 'terminated' || state.group === undefined || !config.autoScalingGroupNames.has(state.group)) {
      log.info('instance state-change: not a terminated instance of a served group; ignored', {
        state: state?.state ?? null,
        group: state?.group ?? null,
      });
      return { status: 'refused' };
    }
    return confirmed({ ...w, group: state.group });
  },
  async act(w, ctx) {
    const cluster = await ctx.cluster();
    const node = (await cluster.listMarked(ctx.config.deploymentName)).find((n) =>
      instanceMatches(n.providerId, w.instanceId),
    );
    const record = node?.drain;
    // Drained and released as promised: nothing of its pods is left to free.
    if (
      node === undefined ||
      record === undefined ||
      record.drained?.outcome === 'drained' ||
      node.outOfService !== undefined
    )
      return 'out-of-service-not-needed';
    const pods = await cluster.podsLeftOn(node.name);
    if (pods.length === 0) return 'out-of-service-not-needed';
    if ((await cluster.taintOutOfService(node, w.instanceId, ctx.config.deploymentName)) !== 'patched')
      return 'out-of-service-not-needed';
    ctx.log.warn('instance terminated with pods still on its node: tainted out-of-service', {
      node: node.name,
      pods: pods.length,
    });
    await cluster.record(outOfServiceTainted(node, w.instanceId, pods));
    ctx.metrics?.emit(
      { Transition: 'instance-terminated', Outcome: 'tainted' },
      { OutOfServiceTainted: { unit: 'Count', value: 1 } },
    );
    return 'out-of-service-tainted';
  },
};

/**
 * The reconciler: our taint comes off a node that came back, Ready under another instance (its
 * name reused). Ready alone proves nothing: the Node of a terminated instance still says Ready
 * until the node lifecycle controller notices the silence.
 */
export async function takeBackOutOfService(
  ctx: { readonly log: Log; readonly cluster: Pick<ClusterGateway, 'untaintOutOfService' | 'record'> },
  node: NodeInfo,
): Promise<boolean> {
  if (node.outOfService === undefined || !node.ready || instanceMatches(node.providerId, node.outOfService))
    return false;
  if ((await ctx.cluster.untaintOutOfService(node)) !== 'patched') return false;
  ctx.log.info('the node is Ready again: took our out-of-service taint off', { node: node.name });
  await ctx.cluster.record(outOfServiceRemoved(node));
  return true;
}
