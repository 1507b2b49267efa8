// Phase 4, settle: after the pods are gone, give load balancers time to stop sending traffic
// to the node (EKS managed node groups wait 60 s), still noticing pods that come back.
// Later settle steps (detaching volumes, say) belong here too.
import { ReturnedPods, waitWatching } from '../drain.js';
import { secondsSince, stopMs, type Step, type Termination } from './termination.js';

export async function settle(t: Termination): Promise<Step> {
  const { options, deps } = t;
  const { clock, log } = deps;
  const resume = options.resume;
  if (t.loadBalancerWaitUntilMs === undefined && resume?.phase === 'settle') {
    t.loadBalancerWaitUntilMs = resume.loadBalancerWaitUntilMs;
    t.drainOutcome = resume.drainOutcome;
    log.info('still waiting for load balancers to deregister the node', { secondsLeft: Math.max(0, -secondsSince(t, resume.loadBalancerWaitUntilMs)) });
  } else if (options.loadBalancerDelaySeconds > 0) {
    log.info('waiting for load balancers to deregister the node', { seconds: options.loadBalancerDelaySeconds });
  }
  const untilMs = t.loadBalancerWaitUntilMs!;
  // Still watching: a pod that tolerates the cordon often lands back only now.
  const watch = (t.watch ??= await deps.pods.watchPodsOnNode(t.node!.name));
  const returns = (t.returns ??= new ReturnedPods(watch.current(), t.node!, deps));
  await waitWatching(watch, returns, Math.min(untilMs, stopMs(t)), clock);
  if (clock.now() < untilMs) return { handOn: 'settle' };
  return { next: 'complete' };
}
