// The shared load-balancer readings nobody waits on any more (termination/shared-targets.ts) are
// taken back by the reconciler: a reading wanted by no termination for 10 minutes is deleted
// (its Lease), so the deployment's namespace holds the groups of the waves under way, not of
// every wave there was. Only with WAIT_FOR_TARGETS (without it nothing is shared).
import type { TargetReadingsSource } from '../cluster/ports/target-readings.js';
import type { Clock } from '../shared/clock.js';
import type { Config } from '../shared/config.js';
import { AccessDeniedError } from '../shared/errors.js';
import { asError, type Log } from '../shared/log.js';

/** How long after the last want a reading is kept. */
export const forgetAfterMs = 10 * 60_000;

export async function forgetReadings(
  cluster: Partial<TargetReadingsSource>,
  deps: { readonly config: Config; readonly clock: Clock; readonly log: Log },
): Promise<readonly string[]> {
  if (!deps.config.waitForTargets || cluster.targetReadings === undefined) return [];
  try {
    return await cluster.targetReadings(deps.config.deploymentName).forget(deps.clock.now() - forgetAfterMs);
  } catch (error) {
    // No Role (RBAC from before 0.5): nothing was shared, nothing to take back.
    if (error instanceof AccessDeniedError) return [];
    deps.log.warn('could not take back old shared load-balancer readings; the next pass tries again', {
      error: asError(error),
    });
    return [];
  }
}
