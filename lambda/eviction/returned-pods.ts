// Pods that tolerate the cordon and were not on the node when the drain began have come back
// (a Deployment tolerating every taint, say). Evicting them again would only start another
// round trip, so each is reported once and not waited for.
import type { EventRecorder } from '../cluster/ports/event-recorder.js';
import type { NodeInfo, PodInfo } from '../cluster/model.js';
import type { PodWatch } from '../cluster/ports/pod-gateway.js';
import { podRescheduledOnDrainingNode } from '../cluster/events/eviction-events.js';
import { isDrainable, podKey, toleratesUnschedulable } from '../cluster/rules/pods.js';
import type { Clock } from '../shared/clock.js';
import type { Log } from '../shared/log.js';

export class ReturnedPods {
  private readonly initial: ReadonlySet<string>;
  private readonly seen = new Map<string, PodInfo>();

  constructor(
    initialPods: readonly PodInfo[],
    private readonly node: Pick<NodeInfo, 'name' | 'uid'>,
    private readonly deps: { readonly events: EventRecorder; readonly log: Log },
  ) {
    this.initial = new Set(initialPods.map((p) => p.uid));
  }

  has(pod: PodInfo): boolean {
    return this.seen.has(pod.uid);
  }

  names(): string[] {
    return [...this.seen.values()].map(podKey);
  }

  async notice(pods: readonly PodInfo[]): Promise<void> {
    for (const pod of pods) {
      if (this.initial.has(pod.uid) || this.seen.has(pod.uid) || !isDrainable(pod) || !toleratesUnschedulable(pod))
        continue;
      this.seen.set(pod.uid, pod);
      this.deps.log.warn('pod tolerating the cordon was scheduled back onto the draining node', { pod: podKey(pod) });
      await this.deps.events.record(podRescheduledOnDrainingNode(this.node, pod));
    }
  }
}

/** Waits until untilMs while still noticing pods that come back (the load-balancer wait). */
export async function waitWatching(
  watch: PodWatch,
  returns: ReturnedPods,
  untilMs: number,
  clock: Clock,
): Promise<void> {
  for (let now = clock.now(); now < untilMs; now = clock.now()) {
    await watch.changed(untilMs - now);
    await returns.notice(watch.current());
  }
}
