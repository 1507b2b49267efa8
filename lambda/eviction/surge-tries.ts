// How long a surge that fails transiently is tried again before its pod is evicted as any
// other (surge-gate.ts): a timeout or a server error says nothing about the surge, so one API
// blip must not evict a Deployment's only Ready pod (found by the soak, seed 16); a failure
// that lasts never holds the pod for more than a few passes.
import type { PodInfo } from '../cluster/model.js';
import { podKey } from '../cluster/rules/pods.js';
import { TransientError } from '../shared/errors.js';
import { asError, type Log } from '../shared/log.js';

/** Passes a surge that fails transiently is tried in, before the pod is evicted as any other. */
export const transientTries = 3;

export class SurgeTries {
  private readonly tries = new Map<string, number>();

  /** True when this failure of the pod's surge is transient and the pod may wait for the next pass. */
  again(pod: PodInfo, error: unknown, log: Log): boolean {
    const tries = (this.tries.get(pod.uid) ?? 0) + 1;
    this.tries.set(pod.uid, tries);
    if (!(error instanceof TransientError) || tries >= transientTries) return false;
    log.info('surge before evict not decided yet (a transient failure); asking again next pass', {
      pod: podKey(pod),
      error: asError(error),
    });
    return true;
  }
}
