// What the wave and rotation sections share around their runs: the environment (a plane of its
// own, the local AWS endpoint's rate limits, the counting proxy, a container per invocation,
// the probe audited), the other tree's handler when asked, and running both in turn.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { awsLikeRateLimits, type RateLimit } from '../demo/aws-rate-limits.js';
import { startEnvironment, type EnvironmentOptions } from '../demo/environment.js';
import { probeUser } from './wave-probe.js';

export interface SectionOptions {
  readonly say: (line: string) => void;
  /** Auto Scaling's one bucket for every action (AWS publishes no numbers): 40 tokens, 10 a second by default. */
  readonly autoScalingBucket?: { readonly capacity: number; readonly refillPerSecond: number };
  /** Another tree whose handler is measured the same way after this one's (`previous`). */
  readonly handlerTree?: string;
  /** Waits until the machine is free of other planes (bench/machine.ts), before the second plane. */
  readonly beforeEachPlane?: () => Promise<void>;
}

export interface Handler {
  readonly tree: string;
  readonly createHandler: NonNullable<EnvironmentOptions['createHandler']>;
}

/** This tree's run, then, with --handler-tree, the same run with that tree's handler, under `previous`. */
export async function thisAndPrevious(
  o: SectionOptions,
  run: (handler: Handler | undefined) => Promise<Record<string, unknown>>,
): Promise<Record<string, unknown>> {
  const current = await run(undefined);
  if (o.handlerTree === undefined) return current;
  const { createRuntime } = (await import(pathToFileURL(join(o.handlerTree, 'lambda', 'runtime.ts')).href)) as {
    createRuntime: Handler['createHandler'];
  };
  await o.beforeEachPlane?.();
  const previous = await run({ tree: o.handlerTree, createHandler: createRuntime });
  const commit = execFileSync('git', ['-C', o.handlerTree, 'rev-parse', '--short', 'HEAD'], {
    encoding: 'utf8',
  }).trim();
  return { ...current, previous: { ...previous, commit } };
}

/** AWS's documented EC2 buckets and the assumed Auto Scaling one, this size if given. */
export function rateLimits(bucket: SectionOptions['autoScalingBucket']): readonly RateLimit[] {
  return bucket === undefined
    ? awsLikeRateLimits
    : awsLikeRateLimits.map((l) => (l.service === 'autoscaling' ? { ...l, ...bucket } : l));
}

/** A plane and the local AWS as a wave or a rotation runs on them, with this tree's handler or `handler`. */
export function fleetEnvironment(
  say: (line: string) => void,
  o: SectionOptions,
  handler: Handler | undefined,
  settle: { readonly loadBalancerDelaySeconds: number; readonly loadBalancersUrl?: string | undefined },
) {
  return startEnvironment({
    log: say,
    loadBalancerDelaySeconds: settle.loadBalancerDelaySeconds,
    drainTimeoutSeconds: 600,
    countBytes: true,
    // The probe's requests too: the API server's own timing of them (serverLatenciesMs).
    auditUsers: [probeUser],
    // Which node each replacement went to: a pod evicted twice is traced to its node's marks.
    auditBindings: true,
    awsRateLimits: rateLimits(o.autoScalingBucket),
    containerPerInvocation: true,
    // kube-controller-manager at 200 requests a second (not 20): the ReplicaSets must replace a
    // wave's evicted pods as fast as a real control plane does, or the budgets measure it.
    manyNodesWithoutKubelet: true,
    ...(settle.loadBalancersUrl !== undefined ? { loadBalancersUrl: settle.loadBalancersUrl } : {}),
    ...(handler ? { createHandler: handler.createHandler } : {}),
  });
}
