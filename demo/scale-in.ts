// A local stand-in for Auto Scaling's scale-in, for the migrate demo and its cluster scenario:
// when the local endpoint is asked to terminate an instance (TerminateInstanceInAutoScalingGroup,
// or a lower desired capacity: the newest instances go), this plays what Auto Scaling does: the
// terminate hook's notification to the real handler, which drains the node and completes the
// action; then the instance and its node are gone. Not AWS: no termination policies beyond
// "newest first", no cooldowns.
import type { Environment } from './environment.js';

export interface ScaleInPlay {
  /** The terminations played so far, each resolved once its instance and node are gone. */
  readonly runs: Promise<void>[];
}

export function playScaleIns(env: Environment, o: { readonly say: (line: string) => void }): ScaleInPlay {
  const runs: Promise<void>[] = [];
  env.aws.onScaleIn((request) => {
    const picked = request.instanceId
      ? [request.instanceId]
      : [...env.aws.instances]
          .filter(([, i]) => i.group === request.group && !i.lifecycleState.startsWith('Terminating'))
          .slice(-(request.count ?? 0))
          .map(([id]) => id);
    for (const id of picked) runs.push(terminate(env, id, o.say));
  });
  return { runs };
}

async function terminate(env: Environment, instanceId: string, say: (line: string) => void): Promise<void> {
  const name = env.aws.instances.get(instanceId)?.privateDnsName;
  const run = await env.terminate(instanceId);
  const status = (run.result as { records?: { status?: string }[] }).records?.[0]?.status;
  say(
    `auto scaling: terminated ${instanceId} (${name}) after its terminate hook: ${status} in ${((Date.now() - run.notifiedMs) / 1000).toFixed(1)} s`,
  );
  env.aws.instances.delete(instanceId);
  // The instance is gone with its node (the cloud controller deletes it).
  if (name) await env.admin.core.deleteNode({ name }).catch(() => undefined);
}
