// How long one scale-in may be deferred, and since when it is: kept on the nodes it passed
// over (deferralAnnotation), because every call of Auto Scaling may reach another container.
// A mark older than the deferral's maximum and a margin belongs to a scale-in long over: it is
// ignored (and the reconciler takes it back).
import type { ClusterGateway } from '../cluster/ports/cluster-gateway.js';
import type { NodeInfo, DeferralMark } from '../cluster/model.js';

import type { Cause } from './payload.js';

/** Past its maximum, a mark is kept this much longer before it counts as a past scale-in's. */
export const staleMarginMs = 15 * 60_000;

/**
 * Auto Scaling keeps asking through a scale-in for as long as desired < current, but fails an
 * instance refresh that terminated nothing for an hour: a refresh is deferred 50 min at most.
 * https://docs.aws.amazon.com/autoscaling/ec2/userguide/lambda-custom-termination-policy.html#lambda-termination-policy-considerations
 */
export const refreshDeferralCapSeconds = 3000;

export function maxDeferralMs(maxSeconds: number, cause: Cause): number {
  return (cause === 'INSTANCE_REFRESH' ? Math.min(maxSeconds, refreshDeferralCapSeconds) : maxSeconds) * 1000;
}

/** A mark that still speaks for a current deferral of this group. */
export function isCurrent(
  mark: DeferralMark | undefined,
  group: string,
  nowMs: number,
  maxMs: number,
): mark is DeferralMark {
  return (
    mark !== undefined &&
    mark.group === group &&
    nowMs - mark.sinceMs < maxMs + staleMarginMs &&
    mark.sinceMs <= nowMs + 60_000
  );
}

/** When this group's current deferral began, from the marks on the candidates' nodes; undefined: none yet. */
export function deferredSinceMs(
  nodes: readonly NodeInfo[],
  group: string,
  nowMs: number,
  maxMs: number,
): number | undefined {
  const since = nodes.flatMap((n) => (isCurrent(n.deferral, group, nowMs, maxMs) ? [n.deferral.sinceMs] : []));
  return since.length > 0 ? Math.min(...since) : undefined;
}

/** The reconciler's rule: a mark no current deferral can still use. */
export function isStaleDeferral(mark: DeferralMark, nowMs: number, maxSeconds: number): boolean {
  return nowMs - mark.sinceMs >= maxSeconds * 1000 + staleMarginMs;
}

/** The reconciler: a deferral mark no scale-in can use any more is taken back (true when it was). */
export async function takeBackDeferral(
  cluster: Pick<ClusterGateway, 'unmarkDeferred'>,
  node: NodeInfo,
  nowMs: number,
  maxSeconds: number,
): Promise<boolean> {
  if (node.deferral === undefined || !isStaleDeferral(node.deferral, nowMs, maxSeconds)) return false;
  return (await cluster.unmarkDeferred(node)) === 'patched';
}
