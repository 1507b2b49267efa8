// Lifecycle actions, from Auto Scaling's records: each completed exactly once and never left to
// the hook's timeout; and nothing written to the cluster on behalf of an action Auto Scaling does
// not confirm (a forged notification, a warning EC2 did not give, a duplicate after the end).
import type { AuditEntry } from '../../cluster/kube.js';
import type { Observations, Violation } from '../observations.js';
import { endOf, nodeNamed, podAt, stateAt } from './reading.js';

/** Exactly one accepted completion per lifecycle action; none expired, none still open when the soak ended. */
export function oneCompletionPerAction(o: Observations): Violation[] {
  return o.actions.flatMap((a) => {
    const accepted = a.completions.filter((c) => c.accepted);
    const what = `the ${a.transition} action of ${a.instanceId} (opened ${new Date(a.openedMs).toISOString()})`;
    if (accepted.length > 1)
      return [
        {
          invariant: 'oneCompletionPerAction',
          atMs: accepted[1]!.atMs,
          message: `${what} was completed ${accepted.length} times`,
        },
      ];
    if (a.expiredMs !== undefined)
      return [
        {
          invariant: 'oneCompletionPerAction',
          atMs: a.expiredMs,
          message: `${what} was left to the hook's heartbeat timeout (${o.settings.heartbeatTimeoutSeconds} s)`,
        },
      ];
    if (accepted.length === 0)
      return [
        { invariant: 'oneCompletionPerAction', atMs: o.endMs, message: `${what} was still open when the soak ended` },
      ];
    return [];
  });
}

const ours = (key: string) =>
  key.startsWith('graceful-node-termination/') || key === 'node.kubernetes.io/exclude-from-external-load-balancers';
const ourTaint = (key: string) =>
  key.startsWith('graceful-node-termination/') || key === 'node.kubernetes.io/out-of-service';
const lifecycleConditions = new Set(['MaintenancePlanned', 'DrainInProgress', 'Drained']);

/** A write to a Node that sets one of our marks (taking marks back needs no owner: the reconciler does it). */
export function setsMark(entry: AuditEntry): boolean {
  const body = entry.requestObject as
    | {
        metadata?: { labels?: Record<string, unknown>; annotations?: Record<string, unknown> };
        spec?: { unschedulable?: unknown; taints?: { key?: string }[] | null };
        status?: { conditions?: { type?: string; status?: string }[] };
      }
    | undefined;
  if (body === undefined || body === null) return entry.verb !== 'get';
  const set = (m: Record<string, unknown> | undefined) =>
    Object.entries(m ?? {}).some(([k, v]) => ours(k) && v !== null && v !== 'false');
  return (
    set(body.metadata?.labels) ||
    set(body.metadata?.annotations) ||
    body.spec?.unschedulable === true ||
    (body.spec?.taints ?? []).some((t) => ourTaint(t.key ?? '')) ||
    (body.status?.conditions ?? []).some((c) => lifecycleConditions.has(c.type ?? '') && c.status === 'True')
  );
}

/** An instance refresh of the group under way then (its marks on the group's nodes). */
function refreshing(o: Observations, group: string | undefined, atMs: number, slackMs = 5_000): boolean {
  return o.refreshes.some((r) => r.group === group && r.startedMs <= atMs && (r.endedMs ?? Infinity) + slackMs >= atMs);
}

/** Whether Auto Scaling (or EC2) had confirmed, at that moment, a reason for us to act on the instance. */
function confirmedOwner(o: Observations, instanceId: string, atMs: number, slackMs = 5_000): boolean {
  const action = o.actions.some(
    (a) => a.instanceId === instanceId && a.openedMs <= atMs && (endOf(a) ?? Infinity) + slackMs >= atMs,
  );
  const leaving = /^(Terminating|Warmed)/.test(stateAt(o.instanceStates, instanceId, atMs) ?? '');
  const spot = o.spots.some((s) => s.instanceId === instanceId && s.confirmed && s.warnedMs <= atMs);
  return action || leaving || spot;
}

/**
 * No write to the cluster on behalf of an action Auto Scaling (or EC2, for a Spot warning) does not confirm: a mark
 * needs an action open on the instance, the instance leaving, a Spot notice, or a refresh of its group under way.
 */
export function noWriteWithoutConfirmation(o: Observations): Violation[] {
  const out: Violation[] = [];
  const flag = (e: AuditEntry, what: string) =>
    out.push({
      invariant: 'noWriteWithoutConfirmation',
      atMs: e.receivedMs,
      message:
        `${what} (${e.verb} ${e.resource}${e.subresource ? `/${e.subresource}` : ''} ` +
        `${e.namespace ? `${e.namespace}/` : ''}${e.name}, HTTP ${e.code}) with no lifecycle action, leaving state ` +
        'or Spot notice confirmed by AWS',
    });
  for (const e of o.audit) {
    if (e.code >= 400 && e.code !== 429) continue;
    if (e.resource === 'nodes' && ['patch', 'update'].includes(e.verb) && setsMark(e)) {
      const node = nodeNamed(o, e.name);
      const deferral =
        deferralOnly(e) &&
        o.policyCalls.some((c) => c.group === node?.group && Math.abs(c.atMs - e.receivedMs) < 30_000);
      const refresh = refreshing(o, node?.group, e.receivedMs);
      if (node && !deferral && !refresh && !confirmedOwner(o, node.instanceId, e.receivedMs))
        flag(e, `a mark on node ${node.name}`);
    } else if (e.resource === 'pods' && (e.subresource === 'eviction' || (e.verb === 'delete' && !e.subresource))) {
      const pod = podAt(o.pods, e.namespace, e.name, e.receivedMs);
      const node = nodeNamed(o, pod?.node);
      if (node && !confirmedOwner(o, node.instanceId, e.receivedMs)) flag(e, `a pod of node ${node.name} taken`);
    } else if (e.resource === 'deployments' && e.verb === 'patch') {
      const onOwnedNode = o.pods.some((p) => {
        if (p.deployment !== `${e.namespace}/${e.name}` || (p.goneMs ?? Infinity) < e.receivedMs - 1_000) return false;
        const node = nodeNamed(o, p.node);
        return node !== undefined && confirmedOwner(o, node.instanceId, e.receivedMs);
      });
      if (!onOwnedNode) flag(e, `Deployment ${e.namespace}/${e.name} restarted`);
    }
  }
  return out;
}

/** The termination policy's own mark (graceful-node-termination/deferred, the owner label): the call owns it. */
function deferralOnly(e: AuditEntry): boolean {
  const body = e.requestObject as { metadata?: { annotations?: Record<string, unknown> } } | undefined;
  return body?.metadata?.annotations?.['graceful-node-termination/deferred'] !== undefined;
}

/** A launch is abandoned only when its node has not joined healthy (docs/how-it-works.md, Launches). */
export function noHealthyLaunchAbandoned(o: Observations): Violation[] {
  return o.launchAbandons
    .filter((l) => l.nodeHealthy)
    .map((l) => ({
      invariant: 'noHealthyLaunchAbandoned',
      atMs: l.atMs,
      message: `the launch of ${l.instanceId} was abandoned while its node ${l.node} was Ready without a startup taint`,
    }));
}
