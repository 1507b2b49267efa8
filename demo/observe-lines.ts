// How the demo's timeline tells observe mode (MODE=observe, docs/observe-mode.md): the handler's
// two log lines, and whether the node is as it was (observe mode writes Events, nothing else).
import type { V1Node, V1Pod } from '@kubernetes/client-node';

/** The timeline's words for observe mode's log lines; undefined for any other line. */
export function observeLine(log: Record<string, unknown>): readonly [string, string] | undefined {
  const list = (v: unknown) => (Array.isArray(v) ? (v as unknown[]) : []);
  switch (log['message']) {
    case 'observe mode: what the termination would do': {
      const blocked = list(log['blocked']) as { pod?: string; budget?: string }[];
      const waitFor = list(log['waitFor']);
      return [
        'observed',
        [
          `would evict ${list(log['evict']).join(', ') || 'nothing'}`,
          waitFor.length > 0 ? `let ${waitFor.join(', ')} finish first` : undefined,
          `held up now: ${blocked.map((b) => `${b.pod} by budget ${b.budget}`).join(', ') || 'nothing'}`,
          'nothing written but Events',
        ]
          .filter(Boolean)
          .join('; '),
      ];
    }
    case 'observe mode: lifecycle action completed CONTINUE without draining':
      return ['completed', 'CompleteLifecycleAction CONTINUE, without draining'];
    default:
      return undefined;
  }
}

export interface NodeState {
  readonly node: V1Node;
  readonly pods: readonly V1Pod[];
}

const excludeLabel = 'node.kubernetes.io/exclude-from-external-load-balancers';
const running = (pods: readonly V1Pod[]) =>
  pods
    .filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed')
    .map((p) => p.metadata?.uid)
    .sort();

/**
 * What changed on the node between two reads, as sentences; empty when nothing did. A batch pod
 * that finished on its own is no change of ours.
 */
export function unchangedNode(before: NodeState, after: NodeState): string[] {
  const changes: string[] = [];
  if ((after.node.spec?.unschedulable ?? false) !== (before.node.spec?.unschedulable ?? false))
    changes.push('the node was cordoned');
  if (after.node.metadata?.labels?.[excludeLabel] !== before.node.metadata?.labels?.[excludeLabel])
    changes.push('the node was labelled out of load balancers');
  const gone = running(before.pods).filter(
    (uid) =>
      !running(after.pods).includes(uid) &&
      after.pods.find((p) => p.metadata?.uid === uid)?.status?.phase !== 'Succeeded',
  );
  if (gone.length > 0) changes.push(`${gone.length} of its pods left`);
  const annotations = (n: V1Node) =>
    Object.keys(n.metadata?.annotations ?? {})
      .filter((k) => k.startsWith('graceful-node-termination/'))
      .sort()
      .join(',');
  if (annotations(after.node) !== annotations(before.node)) changes.push('our annotations changed on the node');
  return changes;
}
