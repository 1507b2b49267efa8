// The drain rules from outside: no eviction (nor deletion) of a pod whose rule is Skip, nor of a
// WaitCompleted pod but by a Spot interruption's drain (which waits for nothing, documented), a
// batch pod only once its wait is over, orders kept (a higher order only once every pod of the
// lower ones is gone); and no pod evicted twice in a wave (its replacement landing on a node
// already known to be leaving).
import type { ActionRecord, Observations, Violation } from '../observations.js';
import {
  documentedRule,
  evicted,
  namesPod,
  nodeEvents,
  nodeNamed,
  onNodeAt,
  podWrites,
  soakTimeOf,
} from './reading.js';

/** How long the drainer may take to see what the soak's watch saw (a pod gone, a node leaving). */
const seenWithinMs = 2_000;

function actionAt(o: Observations, instanceId: string, atMs: number): ActionRecord | undefined {
  return o.actions
    .filter((a) => a.transition === 'terminate' && a.instanceId === instanceId && a.openedMs <= atMs)
    .sort((x, y) => y.openedMs - x.openedMs)[0];
}

const spotDrain = (o: Observations, instanceId: string, atMs: number) =>
  o.spots.some((s) => s.instanceId === instanceId && s.confirmed && s.warnedMs <= atMs);

const orderOf = (q: Parameters<typeof documentedRule>[0]) =>
  (documentedRule(q, { evictDaemonSetPods: true }, -Infinity) as { order?: number }).order;

/** No eviction of a Skip or WaitCompleted pod; a batch pod only after its wait; orders kept. */
export function drainRulesKept(o: Observations): Violation[] {
  const out: Violation[] = [];
  const flag = (atMs: number, message: string) => out.push({ invariant: 'drainRulesKept', atMs, message });
  for (const { entry, pod } of podWrites(o)) {
    if (pod === undefined || pod.node === undefined) continue;
    // Finished only when it finished before the drainer could have read it so (a pod failed by the pod garbage
    // collector after its eviction, or while the eviction was on its way, was evicted as a running pod).
    const rule = documentedRule(pod, o.settings, entry.receivedMs - seenWithinMs);
    const what = `${entry.subresource === 'eviction' ? 'eviction' : 'deletion'} of ${pod.namespace}/${pod.name}`;
    // A Spot interruption waits for nothing (docs/drain-rules.md): its two minutes evict WaitCompleted pods too.
    const spot = spotDrain(o, nodeNamed(o, pod.node)?.instanceId ?? '', entry.receivedMs);
    if (rule.behavior === 'Skip' || (rule.behavior === 'WaitCompleted' && rule.bound === 'deadline' && !spot)) {
      flag(entry.receivedMs, `${what}, whose rule is ${rule.behavior}, on node ${pod.node}`);
      continue;
    }
    if (!evicted(entry)) continue;
    const node = nodeNamed(o, pod.node);
    if (node === undefined || spotDrain(o, node.instanceId, entry.receivedMs)) continue;
    const action = actionAt(o, node.instanceId, entry.receivedMs);
    if (action === undefined) continue;
    // Deadlines count on the handler's clock (soak time); the audit log keeps real time.
    const soakMs = soakTimeOf(o, entry.receivedMs);
    if (rule.behavior === 'WaitCompleted') {
      const batchEndMs = action.notifiedSoakMs + o.settings.batchWaitSeconds * 1000;
      const protectedUntil =
        rule.protectedForMs === undefined ? Infinity : (pod.boundMs ?? pod.createdMs) + rule.protectedForMs;
      if (soakMs < Math.min(batchEndMs, protectedUntil) - seenWithinMs)
        flag(entry.receivedMs, `${what} before its batch wait was over (BATCH_WAIT_SECONDS from the notification)`);
      continue;
    }
    const deadlineMs = action.notifiedSoakMs + o.settings.drainTimeoutSeconds * 1000;
    const timedOut = nodeEvents(o, pod.node, entry.receivedMs).some((e) => e.reason === 'DrainTimedOut');
    if (timedOut || soakMs >= deadlineMs - seenWithinMs) continue;
    // A pod still terminating 30 s past its grace period is reported and no longer waited for (docs/how-it-works.md).
    const given = nodeEvents(o, pod.node, entry.receivedMs).filter((e) => e.reason === 'PodsNotWaitedFor');
    const lower = o.pods.filter((q) => {
      if (q.uid === pod.uid || !onNodeAt(q, pod.node!, entry.receivedMs + seenWithinMs)) return false;
      if (given.some((e) => namesPod(e.message, q))) return false;
      if ((q.boundMs ?? q.createdMs) > action.openedMs) return false;
      const r = documentedRule(q, o.settings, entry.receivedMs);
      return r.behavior === 'Drain' && r.order < rule.order && (q.finishedMs ?? Infinity) > entry.receivedMs;
    });
    if (lower.length > 0)
      flag(
        entry.receivedMs,
        `${what} (order ${rule.order}) while ` +
          `${lower.map((q) => `${q.namespace}/${q.name} (order ${orderOf(q)})`).join(', ')} ` +
          `of a lower order was still on node ${pod.node}`,
      );
  }
  return out;
}

/**
 * When the drainer knew a node was leaving: its own notification's first invocation, or the
 * first invocation of a drain of another instance of its group begun after (which cordons the
 * group's leaving nodes first).
 */
function knownLeavingMs(o: Observations, action: ActionRecord): number {
  const starts = o.actions
    .filter((a) => a.transition === 'terminate' && a.group === action.group && a.firstInvokedMs !== undefined)
    .map((a) => a.firstInvokedMs!)
    .filter((ms) => ms >= action.openedMs);
  return Math.min(...starts, Infinity);
}

/** No pod evicted twice in a wave: none lands on a node already known to be leaving, to be evicted again. */
export function noPodEvictedTwice(o: Observations): Violation[] {
  const out: Violation[] = [];
  for (const { entry, pod } of podWrites(o)) {
    if (!evicted(entry) || pod?.node === undefined || pod.boundMs === undefined) continue;
    if (pod.ownerKind !== 'ReplicaSet' && pod.ownerKind !== 'StatefulSet') continue;
    const node = nodeNamed(o, pod.node);
    const action = node && actionAt(o, node.instanceId, pod.boundMs + 1);
    if (action === undefined || (action.completions.find((c) => c.accepted)?.atMs ?? Infinity) < pod.boundMs) continue;
    const known = knownLeavingMs(o, action);
    if (pod.boundMs > known + 10_000)
      out.push({
        invariant: 'noPodEvictedTwice',
        atMs: entry.receivedMs,
        message:
          `${pod.namespace}/${pod.name} landed on node ${pod.node} ` +
          `${((pod.boundMs - known) / 1000).toFixed(1)} s after ` +
          `the drainer knew its instance ${node!.instanceId} was leaving, and was evicted again from there`,
      });
  }
  return out;
}
