// Phase 3, drain: evict every pod that must leave (PodDisruptionBudgets hold) and wait for
// them, within the deadline. The deadline is the notification's, but never shorter than the
// fair eviction window from when the drain first saw the node (a notification that waited in
// Lambda's queue still gets its evictions), and never past what the action's cap allows.
import { drainNode, ReturnedPods } from '../drain.js';
import { onNode, secondsSince, stopMs, type Step, type Termination } from './termination.js';

/** Logged when a drain hits its deadline; the CDK construct's alarm filters on it. */
export const drainTimedOutMessage = 'drain deadline reached with pods still on the node; completing anyway';

/** Logged when DEADLINE_POLICY=retain abandons the action; the construct's InstancesRetained alarm filters on it. */
export const instanceRetainedMessage = 'drain deadline reached: completing with ABANDON so the group retains the instance, cordoned (DEADLINE_POLICY=retain)';

/** The drain deadline for a drain that first saw the node at firstSeenMs. */
export function drainDeadlineMs(o: Pick<Termination['options'], 'drainDeadlineMs' | 'minEvictionWindowMs' | 'latestDrainEndMs'>, firstSeenMs: number): number {
  return Math.min(o.latestDrainEndMs, Math.max(o.drainDeadlineMs, firstSeenMs + o.minEvictionWindowMs));
}

export async function drain(t: Termination): Promise<Step> {
  const { options, deps } = t;
  const node = t.node!;
  const { clock, log } = deps;
  const watch = (t.watch ??= await deps.pods.watchPodsOnNode(node.name));
  const returns = (t.returns ??= new ReturnedPods(watch.current(), node, deps));
  const deadlineMs = drainDeadlineMs(options, t.firstSeenMs!);
  const windowEndMs = Math.min(t.firstSeenMs! + options.minEvictionWindowMs, deadlineMs);
  const kubeletGone = !node.ready || node.taints.some((taint) => taint.key === 'node.kubernetes.io/unreachable');
  if (options.resume !== undefined) {
    log.info('drain resumed', { handOff: options.resume.count, secondsToDeadline: Math.round((deadlineMs - clock.now()) / 1000) });
  } else {
    log.info('drain started', { secondsToDeadline: Math.round((deadlineMs - clock.now()) / 1000), kubeletGone });
  }
  if (kubeletGone) {
    log.warn('the node is NotReady or unreachable: pods are evicted (budgets hold) but not waited for once their deletion began');
  }
  const result = await drainNode(
    {
      node,
      watch,
      returns,
      deadlineMs,
      stopMs: stopMs(t),
      batch: options.batch,
      evictionConcurrency: options.evictionConcurrency,
      blockedReportMs: options.blockedReportMs,
      resumed: options.resume !== undefined,
      deadlinePolicy: options.deadlinePolicy,
      windowEndMs,
      windowMs: options.minEvictionWindowMs,
      hardDeadlineMs: options.latestDrainEndMs,
      kubeletGone,
    },
    deps,
  );
  t.drain = result;
  t.evictedTotal += result.evicted;
  if (result.outcome === 'stopped') return { handOn: 'drain' };

  const since = secondsSince(t, options.notifiedAtMs);
  if (result.outcome === 'drained') {
    log.info('node drained', { podsEvicted: t.evictedTotal, seconds: since, notWaitedFor: result.notWaitedFor });
    await onNode(t, 'Normal', 'Drained', `All pods left the node in ${since} s (${t.evictedTotal} evicted).`);
  } else {
    const summary = result.stuck.map((s) => `${s.pod} (${s.reason}${s.budgetName ? `: PodDisruptionBudget ${s.budgetName}` : ''})`).join(', ');
    log.error(drainTimedOutMessage, { stuck: result.stuck, policy: options.deadlinePolicy, forced: result.forced });
    const policy =
      options.deadlinePolicy === 'force'
        ? `DEADLINE_POLICY=force: ${result.forced ?? 0} pod(s) were deleted at the deadline minus their grace period; the rest terminate with the instance.`
        : options.deadlinePolicy === 'retain'
          ? `DEADLINE_POLICY=retain: nothing is deleted; the lifecycle action completes with ABANDON and, with the group's instance lifecycle policy set to retain, the instance stays (Terminating:Retained) with this node cordoned while a replacement launches. Fix what held the pods, then: aws autoscaling terminate-instance-in-auto-scaling-group --instance-id ${options.action.instanceId} --no-should-decrement-desired-capacity`
          : 'The instance terminates with them (DEADLINE_POLICY=leave).';
    await onNode(t, 'Warning', 'DrainTimedOut', `Drain deadline reached after ${since} s; ${result.stuck.length} pod(s) did not leave by eviction: ${summary}. ${policy}`);
  }
  t.drainOutcome = result.outcome;
  if (result.outcome === 'timed-out' && options.deadlinePolicy === 'retain') {
    // The instance stays and its pods keep serving: no load-balancer wait, ABANDON now.
    log.error(instanceRetainedMessage, { stuck: result.stuck });
    t.completeWith = 'ABANDON';
    return { next: 'complete' };
  }
  t.loadBalancerWaitUntilMs = clock.now() + options.loadBalancerDelaySeconds * 1000;
  return { next: 'settle' };
}
