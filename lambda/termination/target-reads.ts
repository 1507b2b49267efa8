// How the settle phase's load-balancer wait reads (settle-targets.ts): from the readings the
// deployment shares (shared-targets.ts) when the cluster keeps them and the load balancers can
// be read for everyone, otherwise on its own, as before sharing: its own DescribeTargetHealth
// per group, paced, within a budget of calls.
import type { TargetReading, TargetHold } from '../shared/aws-ports.js';
import { AccessDeniedError } from '../shared/errors.js';
import { asError } from '../shared/log.js';
import { servedForNode } from '../cluster/rules/served-load-balancers.js';
import { SharedTargets } from './shared-targets.js';
import type { Drained, Run } from './state.js';

/** A reading, and (shared) what was not read since the wait began and when to look next. */
export interface Look {
  readonly reading: TargetReading;
  readonly pending: readonly TargetHold[];
  readonly nextAtMs?: number | undefined;
}

/** Sharing when the cluster keeps the readings and the load balancers can be read for everyone. */
export function sharedTargetsOf(run: Run): SharedTargets | undefined {
  const { readings, loadBalancers, clock, log } = run.deps;
  if (readings === undefined || loadBalancers?.registered === undefined || loadBalancers.candidates === undefined)
    return undefined;
  return new SharedTargets(
    {
      readings: readings.targetReadings(run.request.settings.deploymentName),
      registry: { candidates: loadBalancers.candidates, registered: loadBalancers.registered },
      clock,
      log,
    },
    run.request.requestId,
  );
}

/** A first look asks the cluster which load balancers it serves; later ones re-read what held. */
export async function readTargets(
  run: Run,
  d: Drained,
  o: { readonly holds: readonly TargetHold[] | undefined; readonly shared: SharedTargets | undefined; untilMs: number },
): Promise<Look> {
  const { loadBalancers, served } = run.deps;
  const instanceId = run.request.instance.instanceId;
  try {
    const all = o.holds !== undefined || served === undefined ? undefined : await served.servedLoadBalancers();
    const ours = {
      setExclusion: d.record.set.includes('exclude-from-load-balancers'),
      priorExclusion: d.record.priorLabel,
    };
    const scope = all && servedForNode(all, d.node.labels, ours);
    if (o.shared !== undefined && loadBalancers?.candidates !== undefined) {
      const candidates = o.holds ?? (await loadBalancers.candidates(scope));
      const look = await o.shared.look(instanceId, candidates, d.drainedAtMs, o.untilMs);
      if (look !== undefined) return look;
    }
    const reading = await loadBalancers!.holding(
      instanceId,
      o.holds !== undefined ? { among: o.holds } : { served: scope },
    );
    return { reading, pending: [] };
  } catch (error) {
    return {
      reading: { read: false, denied: error instanceof AccessDeniedError, error: asError(error), calls: 0 },
      pending: [],
    };
  }
}

/** The look, or a failed reading once limitMs passed (the request may still answer; nobody waits). */
export async function within(look: Promise<Look>, limitMs: number): Promise<Look> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<Look>((resolve) => {
    const error = new Error(`no answer within ${limitMs} ms`);
    // Node's timers hold at most 2^31 - 1 ms (a longer one would fire at once).
    timer = setTimeout(
      () => resolve({ reading: { read: false, denied: false, error, calls: 0 }, pending: [] }),
      Math.min(limitMs, 2 ** 31 - 1),
    );
  });
  try {
    return await Promise.race([look, late]);
  } finally {
    clearTimeout(timer);
  }
}
