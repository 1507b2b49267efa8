// The terminate use case, in the order EKS managed node groups follow: label the node out
// of load balancers, cordon, evict (PDB-aware), wait for the pods, wait for load balancers,
// then let Auto Scaling terminate the instance.
import type { DeadlinePolicy } from './config.js';
import { drainNode, ReturnedPods, waitWatching, type DrainResult } from './drain.js';
import { isDrainable, podKey } from './pods.js';
import { excludeFromLoadBalancersLabel } from './ports.js';
import type {
  Clock,
  EventRecorder,
  LifecycleActionRef,
  LifecycleActions,
  Log,
  NodeGateway,
  NodeInfo,
  PodGateway,
  PodInfo,
} from './ports.js';

/** Logged when a drain hits its deadline; the CDK construct's alarm filters on it. */
export const drainTimedOutMessage = 'drain deadline reached with pods still on the node; completing anyway';

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
  /**
   * Epoch milliseconds at which this invocation must stop and hand the rest on (its own
   * time limit, or the hook's heartbeat timeout). Ignored without `handOff`.
   */
  readonly invocationStopMs?: number;
  /** Batch pods are waited for until `untilMs`, then drained by `deadlineMs` (see drainNode). */
  readonly batch?: { readonly untilMs: number; readonly deadlineMs: number } | undefined;
  /** A budget refusing a pod this long is reported again, with pending replacements. */
  readonly blockedReportMs?: number;
  /** At the drain deadline: 'force' deletes the remaining pods, 'leave' (default) does not. */
  readonly deadlinePolicy?: DeadlinePolicy;
  /** Latest epoch ms by which the action must be completed; bounds force-delete grace periods. */
  readonly completeByMs?: number;
  /** Set when this invocation continues a drain an earlier invocation handed on. */
  readonly resume?: HandOffState;
  /** The notification's Time (epoch ms): the Events tell durations from it. Default: now. */
  readonly notifiedAtMs?: number;
  /** Sends the rest of the work to a fresh invocation; absent when there is nowhere to send it. */
  readonly handOff?: (next: HandOffState) => Promise<'sent' | 'action-over'>;
}

/** What travels from one invocation to the next. */
export interface HandOffState {
  /** 1 for the first hand-off, then 2, 3, ... */
  readonly count: number;
  /** Set once the node is drained: the load-balancer wait ends then. */
  readonly loadBalancerWaitUntilMs?: number | undefined;
  /** Pods evicted by the earlier invocations of this drain. */
  readonly evicted?: number | undefined;
}

export type TerminateOutcome = 'drained' | 'timed-out' | 'node-not-found' | 'node-gone' | 'handed-off' | 'superseded';

export interface TerminateReport {
  readonly outcome: TerminateOutcome;
  readonly nodeName: string | undefined;
  /** 'pending' when the work was handed on or belongs to another invocation. */
  readonly lifecycleAction: 'completed' | 'already-completed' | 'pending';
  readonly drain: DrainResult | undefined;
  readonly durationMs: number;
}

export async function terminateNode(options: TerminateOptions, deps: TerminateDeps): Promise<TerminateReport> {
  const { action } = options;
  const { nodes, events, lifecycle, clock, log } = deps;
  const startedMs = clock.now();
  const notifiedAtMs = options.notifiedAtMs ?? startedMs;
  const sinceNotification = () => seconds(clock.now() - notifiedAtMs);
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
  const resume = options.resume;
  const evictedBefore = resume?.evicted ?? 0;
  const stopMs = options.handOff ? (options.invocationStopMs ?? Number.POSITIVE_INFINITY) : Number.POSITIVE_INFINITY;
  const chainValue = (count: number) => `${action.lifecycleActionToken}/${count}`;

  if (resume !== undefined) {
    // Duplicate deliveries of one hand-off must not fork the work: the node's annotation
    // names the one invocation chain that carries it.
    if (node.handOff !== chainValue(resume.count)) {
      log.info('this hand-off was already taken up by another delivery; nothing to do', { handOff: resume.count, current: node.handOff });
      return pending('superseded');
    }
    log.info('drain resumed', { handOff: resume.count, secondsToDeadline: Math.round((options.drainDeadlineMs - startedMs) / 1000) });
  } else {
    log.info('drain started', { secondsToDeadline: Math.round((options.drainDeadlineMs - startedMs) / 1000) });
    await onNode(
      'Normal',
      'DrainStarted',
      `Auto Scaling group ${action.autoScalingGroupName} is terminating instance ${action.instanceId}; draining before it goes.`,
    );
  }

  // Label first: pods can be gone in seconds, deregistration from load balancers takes minutes.
  // https://kubernetes.io/docs/reference/labels-annotations-taints/#node-kubernetes-io-exclude-from-external-load-balancers
  // Both steps are skipped when already done (duplicates, resumed drains).
  if (node.labels[excludeFromLoadBalancersLabel] !== 'true') {
    if ((await nodes.excludeFromLoadBalancers(node.name)) === 'node-gone') return nodeGone(node);
    log.info('node labelled for exclusion from external load balancers');
  }
  if (!node.unschedulable) {
    if ((await nodes.cordon(node.name)) === 'node-gone') return nodeGone(node);
    log.info('node cordoned');
    await onNode('Normal', 'Cordoned', 'Node excluded from external load balancers and marked unschedulable.');
  } else if (resume === undefined) {
    log.info('node cordoned');
    await onNode('Normal', 'Cordoned', 'Node excluded from external load balancers and marked unschedulable.');
  }

  const watch = await deps.pods.watchPodsOnNode(node.name);
  try {
    const returns = new ReturnedPods(watch.current(), node, deps);
    let drain: DrainResult;
    let loadBalancerWaitUntilMs = resume?.loadBalancerWaitUntilMs;
    if (loadBalancerWaitUntilMs === undefined) {
      drain = await drainNode(
        {
          node,
          watch,
          returns,
          deadlineMs: options.drainDeadlineMs,
          stopMs,
          batch: options.batch,
          evictionConcurrency: options.evictionConcurrency,
          blockedReportMs: options.blockedReportMs,
          resumed: resume !== undefined,
        },
        deps,
      );
      if (drain.outcome === 'stopped') {
        // Stopped by this invocation's limit, not by the drain deadline: carry on elsewhere.
        return await handOn(node, { count: (resume?.count ?? 0) + 1, evicted: evictedBefore + drain.evicted }, drain);
      }
      if (drain.outcome === 'drained') {
        const evicted = evictedBefore + drain.evicted;
        log.info('node drained', { podsEvicted: evicted, seconds: sinceNotification() });
        await onNode('Normal', 'Drained', `All pods left the node in ${sinceNotification()} s (${evicted} evicted).`);
      } else {
        const summary = drain.stuck
          .map((s) => `${s.pod} (${s.reason}${s.budgetName ? `: PodDisruptionBudget ${s.budgetName}` : ''})`)
          .join(', ');
        log.error(drainTimedOutMessage, { stuck: drain.stuck, policy: options.deadlinePolicy ?? 'leave' });
        const force = options.deadlinePolicy === 'force';
        await onNode(
          'Warning',
          'DrainTimedOut',
          `Drain deadline reached after ${sinceNotification()} s; ${drain.stuck.length} pod(s) remain: ${summary}. ` +
            (force ? 'Deleting them (DEADLINE_POLICY=force).' : 'The instance terminates with them (DEADLINE_POLICY=leave).'),
        );
        if (force) await forceDelete(watch.current().filter((p) => isDrainable(p) && !returns.has(p)));
      }
      loadBalancerWaitUntilMs = clock.now() + options.loadBalancerDelaySeconds * 1000;
      if (options.loadBalancerDelaySeconds > 0) {
        log.info('waiting for load balancers to deregister the node', { seconds: options.loadBalancerDelaySeconds });
      }
    } else {
      drain = { outcome: 'drained', evicted: 0, stuck: [], returned: [] };
      log.info('still waiting for load balancers to deregister the node', { secondsLeft: seconds(loadBalancerWaitUntilMs - clock.now()) });
    }

    // Still watching: a pod that tolerates the cordon often lands back only now.
    await waitWatching(watch, returns, Math.min(loadBalancerWaitUntilMs, stopMs), clock);
    if (clock.now() < loadBalancerWaitUntilMs) {
      return await handOn(node, { count: (resume?.count ?? 0) + 1, loadBalancerWaitUntilMs, evicted: evictedBefore + drain.evicted }, drain);
    }
    const outcome = drain.outcome === 'timed-out' ? 'timed-out' : 'drained';
    const report = await finish(outcome, node, { ...drain, returned: returns.names() });
    await onNode(
      'Normal',
      'LifecycleActionCompleted',
      `Lifecycle action ${report.lifecycleAction === 'completed' ? 'completed' : 'was already completed'} with CONTINUE ${sinceNotification()} s after the notification (${outcome}).`,
    );
    return report;
  } finally {
    watch.close();
  }

  /**
   * Managed node groups' behaviour at their deadline: delete what is left, bypassing
   * PodDisruptionBudgets, each with its own grace period clamped to the time left before
   * the load-balancer wait must begin.
   */
  async function forceDelete(pods: readonly PodInfo[]): Promise<void> {
    const completeByMs = options.completeByMs ?? Number.POSITIVE_INFINITY;
    const leftSeconds = Math.max(0, Math.floor((completeByMs - options.loadBalancerDelaySeconds * 1000 - clock.now()) / 1000));
    for (const pod of pods) {
      const grace = Math.min(pod.terminationGracePeriodSeconds ?? 30, leftSeconds);
      const result = await deps.pods.deletePod(pod, grace);
      if (result === 'gone') continue;
      log.warn('pod deleted at the drain deadline (force policy)', { pod: podKey(pod), gracePeriodSeconds: grace });
      await onNode('Warning', 'PodForceDeleted', `Deleted pod ${podKey(pod)} at the drain deadline with a ${grace} s grace period (DEADLINE_POLICY=force).`);
      await events.record({
        regarding: { kind: 'Pod', name: pod.name, namespace: pod.namespace, uid: pod.uid },
        type: 'Warning',
        reason: 'PodForceDeleted',
        message: `Deleted at the drain deadline of node ${node!.name} with a ${grace} s grace period; its PodDisruptionBudget could not be satisfied in time.`,
      });
    }
  }

  async function handOn(n: NodeInfo, next: HandOffState, drain: DrainResult): Promise<TerminateReport> {
    const claim = await nodes.claimHandOff(n.name, resume ? chainValue(resume.count) : undefined, chainValue(next.count));
    if (claim === 'node-gone') return nodeGone(n);
    if (claim === 'lost') {
      log.info('another delivery carries this drain on; stopping here', { handOff: next.count });
      return pending('superseded');
    }
    try {
      if ((await options.handOff!(next)) === 'action-over') {
        log.info('the lifecycle action is already over (completed or timed out); stopping');
        return pending('superseded', drain);
      }
    } catch (error) {
      // Give the claim back so a retry of this invocation can hand on again.
      await nodes.claimHandOff(n.name, chainValue(next.count), resume ? chainValue(resume.count) : undefined).catch(() => undefined);
      throw error;
    }
    log.info('handed the drain on to a fresh invocation', {
      handOff: next.count,
      phase: next.loadBalancerWaitUntilMs === undefined ? 'drain' : 'load-balancer wait',
      podsLeft: drain.stuck.length,
    });
    return pending('handed-off', drain);
  }

  function pending(outcome: 'handed-off' | 'superseded', drain?: DrainResult): TerminateReport {
    return { outcome, nodeName: node?.name, lifecycleAction: 'pending', drain, durationMs: clock.now() - startedMs };
  }

  async function nodeGone(n: NodeInfo): Promise<TerminateReport> {
    log.warn('node was deleted while draining; completing');
    return finish('node-gone', n);
  }
}

function seconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}
