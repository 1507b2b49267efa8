// Phase 4, settle: after the pods are gone, give load balancers time to stop sending traffic
// to the node (EKS managed node groups wait 60 s), still noticing pods that come back. The
// wait runs from when the drain ended, as our record keeps it across hand-offs.
import { waitWatching } from '../eviction/returned-pods.js';
import { drainedRecord, openPods } from './drain.js';
import { secondsSince, stopMs, type Drained, type Run, type Step } from './state.js';

export async function settle(run: Run, d: Drained): Promise<Step<Drained>> {
  const { clock, log } = run.deps;
  const untilMs = d.drainedAtMs + d.deadlines.loadBalancerDelayMs;
  if (d.result === undefined) {
    log.info('still waiting for load balancers to deregister the node', { secondsLeft: Math.max(0, -secondsSince(clock, untilMs)) });
  } else if (d.deadlines.loadBalancerDelayMs > 0) {
    log.info('waiting for load balancers to deregister the node', { seconds: d.deadlines.loadBalancerDelayMs / 1000 });
  }
  // Still watching: a pod that tolerates the cordon often lands back only now.
  const { watch, returns } = await openPods(run, d);
  await waitWatching(watch, returns, Math.min(untilMs, stopMs(run, d.deadlines)), clock);
  if (clock.now() < untilMs) return { stop: { handOn: 'settle', state: d, record: drainedRecord(d), evictedTotal: d.evictedTotal, result: d.result } };
  return d;
}
