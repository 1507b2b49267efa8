// Marks from outside: once the soak has ended and the reconciler has made its pass, every node
// that stays (its instance in service) is as it was before: none of our labels, annotations,
// taints or conditions, and cordoned only if it was (docs/marks.md, docs/reconciler.md).
import type { NodeState, Observations, Violation } from '../observations.js';

const ourKey = (key: string) =>
  key.startsWith('graceful-node-termination/') || key === 'node.kubernetes.io/exclude-from-external-load-balancers';
const ourTaint = (key: string) =>
  key.startsWith('graceful-node-termination/') || key === 'node.kubernetes.io/out-of-service';

/** Our marks on a node, as comparable lines. */
export function ourMarks(state: NodeState): string[] {
  return [
    ...(state.unschedulable ? ['spec.unschedulable=true'] : []),
    ...Object.entries(state.labels)
      .filter(([k]) => ourKey(k))
      .map(([k, v]) => `label ${k}=${v}`),
    ...Object.keys(state.annotations)
      .filter(ourKey)
      .map((k) => `annotation ${k}`),
    ...state.taints.filter((t) => ourTaint(t.key)).map((t) => `taint ${t.key}`),
    ...state.conditions.map((c) => `condition ${c}`),
  ];
}

const deferredKey = 'graceful-node-termination/deferred';

/** Every mark of ours gone after its owner ended (the last pass made); every node that stays as before. */
export function marksGoneAfterOwnerEnded(o: Observations): Violation[] {
  // A deferral's owner lives TERMINATION_DEFERRAL_MAX_SECONDS + 15 minutes (docs/marks.md): it may stay until then.
  const deferralLivesMs = (o.settings.terminationDeferralMaxSeconds + 15 * 60) * 1000;
  const liveDeferral = (state: NodeState) => {
    const value = state.annotations[deferredKey];
    if (value === undefined) return false;
    const since = Date.parse((JSON.parse(value) as { since?: string }).since ?? '');
    return !(since + deferralLivesMs <= o.endSoakMs);
  };
  return o.nodes.flatMap((n) => {
    const last = o.instanceStates.filter((s) => s.instanceId === n.instanceId).at(-1)?.state;
    if (n.final === undefined || last !== 'InService') return [];
    const deferring = liveDeferral(n.final);
    const now = ourMarks(n.final);
    const before = ourMarks(n.initial);
    const left = now.filter(
      (m) =>
        !before.includes(m) &&
        !(deferring && (m === `annotation ${deferredKey}` || m.startsWith('label graceful-node-termination/owner='))),
    );
    const lost = before.filter((m) => !now.includes(m));
    if (left.length === 0 && lost.length === 0) return [];
    return [
      {
        invariant: 'marksGoneAfterOwnerEnded',
        atMs: o.endMs,
        message:
          `node ${n.name} (instance ${n.instanceId} in service) is not as it was after the last reconcile pass: ` +
          [...left.map((m) => `+${m}`), ...lost.map((m) => `-${m}`)].join(', '),
      },
    ];
  });
}
