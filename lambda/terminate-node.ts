// The terminate use case, in the order EKS managed node groups follow: label the node out
// of load balancers, cordon, evict (PDB-aware), wait for the pods, wait for load balancers,
// then let Auto Scaling terminate the instance.
import { drainNode, ReturnedPods, waitWatching, type DrainResult } from './drain.js';
import type {
  Clock,
  EventRecorder,
  LifecycleActionRef,
  LifecycleActions,
  Log,
  NodeGateway,
  NodeInfo,
  PodGateway,
} from './ports.js';

/** Logged when a drain hits its deadline; the CDK construct's alarm filters on it. */
export const drainTimedOutMessage = 'drain deadline reached with pods still on the node; completing anyway';

export const excludeFromLoadBalancersLabel = 'node.kubernetes.io/exclude-from-external-load-balancers';

export interface TerminateDeps {
  readonly nodes: NodeGateway;
  readonly pods: PodGateway;
  readonly events: EventRecorder;
  readonly lifecycle: LifecycleActions;
  readonly clock: Clock;
  readonly log: Log;
}

export interface TerminateOptions {
  readonly action: LifecycleActionRef;
  /** Epoch milliseconds by which evicting and waiting for pods must stop. */
  readonly drainDeadlineMs: number;
  readonly loadBalancerDelaySeconds: number;
  readonly evictionConcurrency: number;
}

export type TerminateOutcome = 'drained' | 'timed-out' | 'node-not-found' | 'node-gone';

export interface TerminateReport {
  readonly outcome: TerminateOutcome;
  readonly nodeName: string | undefined;
  readonly lifecycleAction: 'completed' | 'already-completed';
  readonly drain: DrainResult | undefined;
  readonly durationMs: number;
}

export async function terminateNode(options: TerminateOptions, deps: TerminateDeps): Promise<TerminateReport> {
  const { action } = options;
  const { nodes, events, lifecycle, clock, log } = deps;
  const startedMs = clock.now();
  const finish = async (outcome: TerminateOutcome, node: NodeInfo | undefined, drain?: DrainResult) => {
    const lifecycleAction = await lifecycle.complete(action, 'CONTINUE');
    if (lifecycleAction === 'already-completed') {
      log.info('lifecycle action was already completed (duplicate delivery or timed out); nothing left to do');
    } else {
      log.info('lifecycle action completed', { result: 'CONTINUE' });
    }
    return { outcome, nodeName: node?.name, lifecycleAction, drain, durationMs: clock.now() - startedMs };
  };

  const node = await nodes.findNodeByInstanceId(action.instanceId);
  if (node === undefined) {
    log.warn('no node has this instance in spec.providerID; completing so the instance is not held');
    return finish('node-not-found', undefined);
  }
  log.appendKeys?.({ node: node.name });
  const onNode = (type: 'Normal' | 'Warning', reason: string, message: string) =>
    events.record({ regarding: { kind: 'Node', name: node.name, uid: node.uid }, type, reason, message });

  log.info('drain started', { secondsToDeadline: Math.round((options.drainDeadlineMs - startedMs) / 1000) });
  await onNode(
    'Normal',
    'DrainStarted',
    `Auto Scaling group ${action.autoScalingGroupName} is terminating instance ${action.instanceId}; draining before it goes.`,
  );

  // Label first: pods can be gone in seconds, deregistration from load balancers takes minutes.
  // https://kubernetes.io/docs/reference/labels-annotations-taints/#node-kubernetes-io-exclude-from-external-load-balancers
  if (node.labels[excludeFromLoadBalancersLabel] !== 'true') {
    if ((await nodes.excludeFromLoadBalancers(node.name)) === 'node-gone') return nodeGone(node);
    log.info('node labelled for exclusion from external load balancers');
  }
  if (!node.unschedulable) {
    if ((await nodes.cordon(node.name)) === 'node-gone') return nodeGone(node);
  }
  log.info('node cordoned');
  await onNode('Normal', 'Cordoned', 'Node excluded from external load balancers and marked unschedulable.');

  const watch = await deps.pods.watchPodsOnNode(node.name);
  try {
    const returns = new ReturnedPods(watch.current(), node, deps);
    const drain = await drainNode(
      { node, watch, returns, deadlineMs: options.drainDeadlineMs, evictionConcurrency: options.evictionConcurrency },
      deps,
    );
    if (drain.outcome === 'drained') {
      log.info('node drained', { podsEvicted: drain.evicted, seconds: seconds(clock.now() - startedMs) });
      await onNode('Normal', 'Drained', `All pods left the node in ${seconds(clock.now() - startedMs)} s (${drain.evicted} evicted).`);
    } else {
      const summary = drain.stuck
        .map((s) => `${s.pod} (${s.reason}${s.budgetName ? `: PodDisruptionBudget ${s.budgetName}` : ''})`)
        .join(', ');
      log.error(drainTimedOutMessage, { stuck: drain.stuck });
      await onNode(
        'Warning',
        'DrainTimedOut',
        `Drain deadline reached after ${seconds(clock.now() - startedMs)} s; ${drain.stuck.length} pod(s) remain: ${summary}. The instance terminates with them.`,
      );
    }

    if (options.loadBalancerDelaySeconds > 0) {
      log.info('waiting for load balancers to deregister the node', { seconds: options.loadBalancerDelaySeconds });
      // Still watching: a pod that tolerates the cordon often lands back only now.
      await waitWatching(watch, returns, clock.now() + options.loadBalancerDelaySeconds * 1000, clock);
    }
    const report = await finish(drain.outcome, node, { ...drain, returned: returns.names() });
    await onNode(
      'Normal',
      'LifecycleActionCompleted',
      `Lifecycle action ${report.lifecycleAction === 'completed' ? 'completed' : 'was already completed'} with CONTINUE after ${seconds(report.durationMs)} s (${drain.outcome}).`,
    );
    return report;
  } finally {
    watch.close();
  }

  async function nodeGone(n: NodeInfo): Promise<TerminateReport> {
    log.warn('node was deleted while draining; completing');
    return finish('node-gone', n);
  }
}

function seconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}
