// Surge before evict from outside (docs/surge.md): a Deployment opted in never drops below one
// Ready pod because the drainer evicted its last one while a replacement could have been placed
// on a node that stays; and it is never restarted twice for one drain.
import type { Observations, PodRecord, Violation } from '../observations.js';
import { nodeEvents, onNodeAt, stateAt } from './reading.js';

/** Each stretch during which the pod counted as Ready (Ready, and its deletion not begun). */
function readyStretches(p: PodRecord): { fromMs: number; toMs: number }[] {
  const end = Math.min(p.deletionMs ?? Infinity, p.goneMs ?? Infinity);
  return p.ready
    .map((r) => ({ fromMs: r.fromMs, toMs: Math.min(r.toMs ?? Infinity, end) }))
    .filter((r) => r.toMs > r.fromMs);
}

/** The moments the Deployment went from one Ready pod to none, and the pod that stopped counting. */
export function readyGaps(pods: readonly PodRecord[]): { atMs: number; pod: PodRecord }[] {
  const edges = pods.flatMap((pod) =>
    readyStretches(pod).flatMap((s) => [
      { atMs: s.fromMs, delta: 1, pod },
      ...(Number.isFinite(s.toMs) ? [{ atMs: s.toMs, delta: -1, pod }] : []),
    ]),
  );
  edges.sort((x, y) => x.atMs - y.atMs || y.delta - x.delta);
  const gaps: { atMs: number; pod: PodRecord }[] = [];
  let ready = 0;
  for (const e of edges) {
    ready += e.delta;
    if (ready === 0 && e.delta < 0) gaps.push({ atMs: e.atMs, pod: e.pod });
  }
  return gaps;
}

/** A node that stays could have taken a replacement: Ready in the cluster, not cordoned, its instance in service. */
function placeable(o: Observations, atMs: number): string | undefined {
  return o.nodes.find((n) => {
    if ((n.deletedMs ?? Infinity) <= atMs) return false;
    const cordoned = n.cordons.filter((c) => c.atMs <= atMs).at(-1)?.unschedulable ?? n.initial.unschedulable;
    const state = stateAt(o.instanceStates, n.instanceId, atMs);
    const leaving = o.actions.some(
      (a) => a.instanceId === n.instanceId && a.transition === 'terminate' && a.openedMs <= atMs,
    );
    return !cordoned && state === 'InService' && !leaving;
  })?.name;
}

const excused = new Set(['SurgeTimedOut', 'SurgeRefused', 'DrainTimedOut']);

export function surgeKeepsOneReady(o: Observations): Violation[] {
  const out: Violation[] = [];
  for (const deployment of o.surgeDeployments) {
    const pods = o.pods.filter((p) => p.deployment === deployment);
    for (const gap of readyGaps(pods)) {
      const node = gap.pod.node;
      const taken = o.audit.some(
        (e) =>
          e.resource === 'pods' &&
          e.namespace === gap.pod.namespace &&
          e.name === gap.pod.name &&
          (e.subresource === 'eviction' ? e.code === 201 : e.verb === 'delete' && e.code < 400) &&
          e.receivedMs <= gap.atMs + 1_000 &&
          e.receivedMs >= gap.atMs - 5_000,
      );
      if (!taken || node === undefined) continue;
      if (nodeEvents(o, node, gap.atMs + 1_000).some((e) => excused.has(e.reason))) continue;
      if (
        o.spots.some(
          (s) =>
            s.confirmed && s.warnedMs <= gap.atMs && o.nodes.find((n) => n.name === node)?.instanceId === s.instanceId,
        )
      )
        continue;
      const elsewhere = placeable(o, gap.atMs);
      if (elsewhere !== undefined)
        out.push({
          invariant: 'surgeKeepsOneReady',
          atMs: gap.atMs,
          message:
            `${deployment} lost its last Ready pod (${gap.pod.name}, evicted from ${node}) while ${elsewhere} could ` +
            `have taken a replacement, and no SurgeTimedOut, SurgeRefused or DrainTimedOut Event said why`,
        });
    }
    out.push(...restartsPerDrain(o, deployment, pods));
  }
  return out;
}

/** Never restarted twice for one drain: a second restart while a pod the first was for is still on its leaving node. */
function restartsPerDrain(o: Observations, deployment: string, pods: readonly PodRecord[]): Violation[] {
  const restarts = o.audit
    .filter(
      (e) =>
        e.resource === 'deployments' && e.verb === 'patch' && e.code < 400 && `${e.namespace}/${e.name}` === deployment,
    )
    .map((e) => e.receivedMs)
    .sort((x, y) => x - y);
  const out: Violation[] = [];
  for (let i = 1; i < restarts.length; i++) {
    const [first, second] = [restarts[i - 1]!, restarts[i]!];
    const held = pods.find((p) => {
      if (p.node === undefined || !onNodeAt(p, p.node, first) || !onNodeAt(p, p.node, second)) return false;
      if ((p.deletionMs ?? Infinity) <= second) return false;
      const instance = o.nodes.find((n) => n.name === p.node)?.instanceId;
      return o.actions.some((a) => a.instanceId === instance && a.transition === 'terminate' && a.openedMs <= first);
    });
    if (held)
      out.push({
        invariant: 'surgeKeepsOneReady',
        atMs: second,
        message:
          `${deployment} was restarted twice (${new Date(first).toISOString()}, ${new Date(second).toISOString()}) ` +
          `for the drain of ${held.node}, whose pod ${held.name} was still there`,
      });
  }
  return out;
}
