// The load balancers of a wave with target groups (--wave-target-groups): instance target groups
// in the ELB stand-in (test/fakes/elb-stub.ts: ELB's Describe bucket of 40 calls refilled at 10 a
// second, answered 400 Throttling; each answer held 30 ms), each bound by a TargetGroupBinding
// (targetType instance, a node selector) to a NodePort Service as the AWS Load Balancer
// Controller leaves them, with deregistration delays spread over a range; each node registered
// in several groups (the groups whose selector its slot label matches); and the controller
// itself played (bench/lb-controller-player.ts). What it reports: the drainer's and the
// controller's ELB calls and throttles, and how long after the last group let an instance go
// the drainer released it.
import type { Environment } from '../demo/environment.js';
import type { ElbStub } from '../test/fakes/elb-stub.js';
import { bindTargetGroup, ensureNamespace, installTargetGroupBindingCrd } from '../test/cluster/kube.js';
import { testAws } from '../test/cluster/plane/token-webhook.js';
import { round } from './fleet.js';
import {
  controllerAgent,
  startControllerPlayer,
  watchUnsuitableNodes,
  type ControllerPlayer,
  type PlayedGroup,
} from './lb-controller-player.js';
import type { FleetNode } from './wave-fleet.js';
import { percentile } from './wave-probe.js';

export interface TargetGroupShape {
  /** Target groups of the cluster (0: none, the wave as before). */
  readonly groups: number;
  /** Groups each node is registered in (about: the groups are split over G / this slots). */
  readonly groupsPerNode: number;
  /** Deregistration delays, spread evenly over the groups from the first to the last. */
  readonly delaySeconds: readonly [number, number];
  /** The controller reads each group about this often besides its reconciles (0: never). */
  readonly controllerReadSeconds: number;
}

/** ELB's Describe bucket (documented: 40 tokens, 10 a second, per account and Region) and its answers' latency. */
export const elbBucket = { capacity: 40, refillPerSecond: 10 } as const;
export const elbAnswerDelayMs = 30;
const slotLabel = 'bench.graceful-node-termination/lb-slot';
const lbNamespace = 'wave-lb';

export const slotsOf = (s: TargetGroupShape) => Math.max(1, Math.round(s.groups / Math.max(1, s.groupsPerNode)));

/** The label that puts a node in the groups of its slot (a TargetGroupBinding's nodeSelector matches it). */
export function slotLabels(s: TargetGroupShape): (index: number) => Record<string, string> {
  const slots = slotsOf(s);
  return (index) => ({ [slotLabel]: String(index % slots) });
}

export interface TargetWorld {
  readonly groups: readonly PlayedGroup[];
  /** The controller, once the nodes are registered (startController). */
  controller: ControllerPlayer | undefined;
  register(nodes: readonly FleetNode[]): void;
  startController(nodes: ReadonlyMap<string, string>, say: (line: string) => void): ControllerPlayer;
  stop(): void;
}

/** The CRD, a NodePort Service and a TargetGroupBinding per group, the groups in the stand-in with their delays. */
export async function createTargetGroups(env: Environment, elb: ElbStub, s: TargetGroupShape): Promise<TargetWorld> {
  const a = env.admin;
  await ensureNamespace(a, lbNamespace);
  await installTargetGroupBindingCrd(a);
  const slots = slotsOf(s);
  const [low, high] = s.delaySeconds;
  const groups: PlayedGroup[] = [];
  for (let k = 0; k < s.groups; k++) {
    const name = `k8s-wave-app${k}`;
    const group = elb.addTargetGroup(name, {
      tags: { 'elbv2.k8s.aws/cluster': testAws.clusterName, 'service.k8s.aws/stack': `${lbNamespace}/${name}` },
    });
    await bindTargetGroup(a, {
      namespace: lbNamespace,
      service: name,
      targetGroupArn: group.arn,
      nodeSelector: { matchLabels: { [slotLabel]: String(k % slots) } },
    });
    const delay = s.groups === 1 ? low : Math.round(low + ((high - low) * k) / (s.groups - 1));
    groups.push({ group, deregistrationDelaySeconds: delay });
  }
  const world: TargetWorld = {
    groups,
    controller: undefined,
    register(nodes) {
      for (const n of nodes)
        for (const [k, p] of groups.entries())
          if (k % slots === n.index % slots) p.group.targets.set(n.instanceId, 'healthy');
    },
    startController(nodes, say) {
      world.controller = startControllerPlayer({
        elb,
        nodes: watchUnsuitableNodes(a),
        groups,
        instanceOf: (name) => nodes.get(name),
        periodicReadSeconds: s.controllerReadSeconds,
        say,
      });
      return world.controller;
    },
    stop: () => world.controller?.stop(),
  };
  return world;
}

export interface ReleaseOf {
  readonly instanceId: string;
  /** When its lifecycle action was completed (CONTINUE): the instance released. */
  readonly releasedAtMs: number;
}

/**
 * ELB's side of a wave: calls and throttles by caller between fromMs and toMs, and for each
 * released instance how long after the last of its groups let it go it was released.
 */
export function targetGroupSummary(
  elb: ElbStub,
  world: TargetWorld,
  s: TargetGroupShape,
  w: {
    readonly fromMs: number;
    readonly toMs: number;
    readonly terminations: number;
    readonly released: readonly ReleaseOf[];
    /** Instances the handler said it released at LOAD_BALANCER_MAX_WAIT_SECONDS, or at the fixed delay. */
    readonly atMaximumWait: ReadonlySet<string>;
    readonly atFallback: ReadonlySet<string>;
    /** When each instance's drain ended, and when its settle logged the groups letting it go (the handler's log). */
    readonly drainedAtMs: ReadonlyMap<string, number>;
    readonly letGoSeenAtMs: ReadonlyMap<string, number>;
  },
) {
  const calls = elb.calls.filter((c) => c.atMs >= w.fromMs && c.atMs <= w.toMs);
  const mine = (c: (typeof calls)[number]) => !(c.agent ?? '').startsWith(controllerAgent);
  const handler = calls.filter(mine);
  const controller = calls.filter((c) => !mine(c));
  const byAction = (list: typeof calls) => {
    const out: Record<string, number> = {};
    for (const c of list) out[c.action] = (out[c.action] ?? 0) + 1;
    return out;
  };
  const player = world.controller!;
  const delays: number[] = [];
  /** From the later of the last group letting go and the drain's end; from the last letting go to the settle seeing it. */
  const afterReady: number[] = [];
  const seen: number[] = [];
  let releasedWhileHeld = 0;
  let neverDeregistered = 0;
  for (const r of w.released) {
    const groupsOf = world.groups.filter(
      (p) => player.letGoAtMs.get(r.instanceId)?.has(p.group.arn) || p.group.targets.has(r.instanceId),
    );
    const left = [...(player.letGoAtMs.get(r.instanceId)?.values() ?? [])];
    const stillHeld = groupsOf.length > left.length || left.some((t) => t > r.releasedAtMs);
    if (!player.deregisteredAtMs.has(r.instanceId) && groupsOf.length > 0) neverDeregistered++;
    if (stillHeld) releasedWhileHeld++;
    if (stillHeld || left.length === 0) continue;
    const lastMs = Math.max(...left);
    delays.push((r.releasedAtMs - lastMs) / 1000);
    const drainedMs = w.drainedAtMs.get(r.instanceId);
    if (drainedMs !== undefined) afterReady.push((r.releasedAtMs - Math.max(lastMs, drainedMs)) / 1000);
    const seenMs = w.letGoSeenAtMs.get(r.instanceId);
    if (seenMs !== undefined && seenMs >= lastMs) seen.push((seenMs - lastMs) / 1000);
  }
  // How long the controller took to deregister a node's targets once it saw it excluded or cordoned.
  const lags: number[] = [];
  for (const r of w.released)
    for (const atMs of player.deregisteredAtMs.get(r.instanceId)?.values() ?? [])
      lags.push((atMs - (player.unsuitableAtMs.get(r.instanceId) ?? atMs)) / 1000);
  lags.sort((x, y) => x - y);
  const sorted = delays.sort((x, y) => x - y);
  const stat = (p: number) => (sorted.length > 0 ? round(percentile(sorted, p)) : undefined);
  const spread = (xs: number[]) => {
    const s = [...xs].sort((x, y) => x - y);
    const at = (p: number) => (s.length > 0 ? round(percentile(s, p)) : undefined);
    return {
      measured: s.length,
      medianSeconds: at(0.5),
      p99Seconds: at(0.99),
      maxSeconds: at(1),
      within15Seconds: s.filter((d) => d <= 15).length,
    };
  };
  return {
    groups: s.groups,
    groupsPerNode: s.groups / slotsOf(s),
    deregistrationDelaySeconds: { min: s.delaySeconds[0], max: s.delaySeconds[1] },
    controllerReadSeconds: s.controllerReadSeconds,
    bucket: elbBucket,
    answerDelayMs: elbAnswerDelayMs,
    handlerCalls: handler.length,
    handlerCallsPerTermination: round(handler.length / w.terminations),
    handlerCallsByAction: byAction(handler),
    handlerThrottled: handler.filter((c) => c.throttled).length,
    controllerCalls: controller.length,
    controllerCallsByKind: {
      reconcile: controller.filter((c) => c.agent?.endsWith('reconcile')).length,
      periodic: controller.filter((c) => c.agent?.endsWith('periodic')).length,
    },
    controllerThrottled: controller.filter((c) => c.throttled).length,
    controller: {
      ...player.counts,
      /** Seconds from a node seen excluded or cordoned to its target deregistered, over every (node, group). */
      deregistrationLagSeconds: {
        median: lags.length > 0 ? round(percentile(lags, 0.5)) : undefined,
        p99: lags.length > 0 ? round(percentile(lags, 0.99)) : undefined,
        max: lags.length > 0 ? round(lags.at(-1)!) : undefined,
      },
    },
    release: {
      /** Released after every group let the instance go: seconds from the last one's letting go. */
      measured: sorted.length,
      medianSeconds: stat(0.5),
      p99Seconds: stat(0.99),
      maxSeconds: sorted.length > 0 ? round(sorted.at(-1)!) : undefined,
      within15Seconds: sorted.filter((d) => d <= 15).length,
      /** Released while a group still had the instance registered or draining. */
      releasedWhileHeld,
      /** Of those, instances the controller never deregistered (its reads kept failing). */
      neverDeregistered,
      atMaximumWait: w.atMaximumWait.size,
      atFallback: w.atFallback.size,
      /**
       * The same from the later of the last group letting go and the drain's end (a release cannot come before
       * either); and from the last group letting go to the settle seeing it (the shared reading's lag alone).
       */
      afterDrainAndLetGo: spread(afterReady),
      seenAfterLetGo: spread(seen),
    },
  };
}
