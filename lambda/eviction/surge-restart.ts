// The one restart of a Deployment for a drain (surge-gate.ts, surge-readings.ts). Two
// invocations of the same drain run side by side when a delivery is duplicated or a killed
// invocation is retried: each writes the restart over the version it read only, so the second
// to arrive is refused (409) and joins the restart the first made instead of making another
// (found by the soak, seed 1: two restarts 8 ms apart for one drain).
import type { DeploymentInfo, SurgeGateway } from '../cluster/ports/surge-gateway.js';
import { TransientError } from '../shared/errors.js';

export type RestartOutcome =
  /** Our restart is written. */
  | { readonly kind: 'restarted'; readonly d: DeploymentInfo }
  /** Someone restarted it since we read it (or since the drain began): its restart serves this drain. */
  | { readonly kind: 'joined'; readonly d: DeploymentInfo & { readonly restartedAt: string } }
  | { readonly kind: 'gone' };

/** Conflicts from changes that are not restarts (status, scale) are tried again this many times. */
export const restartTries = 3;

/** A restart written at or after the drain began: made for it (a twin invocation's) or at least fresh enough. */
export function restartedSince(d: Pick<DeploymentInfo, 'restartedAt'>, sinceMs: number): string | undefined {
  if (d.restartedAt === undefined) return undefined;
  const atMs = Date.parse(d.restartedAt);
  // The restart value has whole seconds (restartValue): the drain's start is compared the same way.
  return atMs >= Math.floor(sinceMs / 1000) * 1000 ? d.restartedAt : undefined;
}

/**
 * Writes `restartedAt` over the version read, unless the Deployment's restart changed since that read. A conflict
 * with the restart unchanged (the controller wrote the status, an HPA the scale) is read again and tried again.
 */
export async function restartOnce(
  api: Pick<SurgeGateway, 'restartDeployment' | 'readDeployment'>,
  read: DeploymentInfo,
  restartedAt: string,
): Promise<RestartOutcome> {
  let d = read;
  for (let i = 0; i < restartTries; i++) {
    const result = await api.restartDeployment(d, restartedAt);
    if (result === 'patched') return { kind: 'restarted', d: { ...d, restartedAt } };
    if (result === 'gone') return { kind: 'gone' };
    const now = await api.readDeployment(d.namespace, d.name);
    if (now === undefined || now.uid !== read.uid) return { kind: 'gone' };
    if (now.restartedAt !== read.restartedAt && now.restartedAt !== undefined)
      return { kind: 'joined', d: { ...now, restartedAt: now.restartedAt } };
    d = now;
  }
  throw new TransientError(
    `restart deployment ${read.namespace}/${read.name}: it changed under each of ${restartTries} tries (409)`,
  );
}
