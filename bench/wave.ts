// The wave section of `npm run bench` (issue 21): a group of --wave-nodes kwok nodes of
// realistic size running Deployments spread over every node under budgets (bench/wave-fleet.ts),
// and --wave-size of them terminated at once, their notifications arriving within 10 s
// (jittered as SNS fans them out). The local AWS endpoints enforce token-bucket rate limits
// (demo/aws-rate-limits.ts). Lambda is played as it scales out and retries
// (bench/wave-lambda.ts). A single drain on the same plane first is the yardstick for the
// wave's per-node cost. Kubernetes requests come from the audit log, bytes from the counting
// proxy in front of the API server, AWS calls from the local endpoint. A probe client
// (bench/wave-probe.ts) GETs a node in a loop before and during the wave.
// --wave-target-groups G (issue 40): the same wave behind G instance target groups bound by
// TargetGroupBindings, the AWS Load Balancer Controller played beside it and the handler waiting
// for the targets (WAIT_FOR_TARGETS); its ELB calls, throttles and release delays are reported
// (bench/wave-targets.ts). 0, the default: the wave as before, without load balancers.
// --handler-tree <dir> runs the same wave again, on a fresh plane, with that tree's handler
// (its lambda/runtime.ts), written beside this one's under `previous`.
import os from 'node:os';
import type { Environment } from '../demo/environment.js';
import { seeded } from '../test/cluster/fault-proxy.js';
import { startElbStub } from '../test/fakes/elb-stub.js';
import { byDrainer, readAudit, sleep, until } from '../test/cluster/kube.js';
import { round } from './fleet.js';
import { startCpuCount } from './process-cpu.js';
import {
  apps,
  averageNode,
  budgetShare,
  createNodes,
  createWorkloads,
  namespace,
  nodeJsonBytes,
  running,
  settled,
  shutdownDelaysSeconds,
  singleDrain,
  untilReady,
  type FleetNode,
} from './wave-fleet.js';
import { playLambda } from './wave-lambda.js';
import {
  fleetEnvironment,
  rateLimits,
  thisAndPrevious,
  type Handler,
  type SectionOptions,
} from './wave-environment.js';
import { probeSummary, startProbe } from './wave-probe.js';
import { rateLimitsOf, spanSummary } from './wave-report.js';
import { markCoverage, traceTwiceEvicted } from './wave-twice.js';
import {
  createTargetGroups,
  elbAnswerDelayMs,
  elbBucket,
  slotLabels,
  targetGroupSummary,
  type TargetGroupShape,
  type TargetWorld,
} from './wave-targets.js';

export interface WaveOptions extends SectionOptions {
  readonly nodes: number;
  readonly waveSize: number;
  readonly podsPerNode: number;
  /** Target groups in front of the nodes (groups 0 or absent: none, the wave as before). */
  readonly targetGroups?: TargetGroupShape;
}

/**
 * Without target groups the handler waits a fixed 2 s for the load balancers (WAIT_FOR_TARGETS=false);
 * with them it reads them, and a group it cannot read holds the instance at least EKS's 60 s.
 */
const loadBalancerDelaySeconds = 2;
const loadBalancerDelayWithTargetsSeconds = 60;
const notificationWindowMs = 10_000;

export async function runWaveSection(o: WaveOptions): Promise<Record<string, unknown>> {
  return thisAndPrevious(o, (handler) => runWave(o, handler));
}

async function runWave(o: WaveOptions, handler: Handler | undefined): Promise<Record<string, unknown>> {
  const say = (line: string) => o.say(`wave${handler ? ' (previous)' : ''}: ${line}`);
  const lb = o.targetGroups !== undefined && o.targetGroups.groups > 0 ? o.targetGroups : undefined;
  const elb = lb ? await startElbStub() : undefined;
  const delaySeconds = lb ? loadBalancerDelayWithTargetsSeconds : loadBalancerDelaySeconds;
  const env = await fleetEnvironment(say, o, handler, {
    loadBalancerDelaySeconds: delaySeconds,
    loadBalancersUrl: elb?.url,
  }).catch(async (error: unknown) => {
    await elb?.close();
    throw error;
  });
  let targets: TargetWorld | undefined;
  try {
    if (elb && lb) {
      targets = await createTargetGroups(env, elb, lb);
      say(
        `${lb.groups} target groups bound by TargetGroupBindings, each node in ${lb.groups / Math.round(lb.groups / lb.groupsPerNode)} of them`,
      );
    }
    const fleet = await createFleet(env, o, say, lb);
    if (elb && targets) {
      targets.register(fleet.nodes);
      elb.bucket = elbBucket;
      elb.delayMs = elbAnswerDelayMs;
      targets.startController(new Map(fleet.nodes.map((n) => [n.name, n.instanceId])), say);
    }
    const probe = await startProbe(env, fleet.staying.name);
    const elbBefore = elb?.calls.length ?? 0;
    const single = await singleDrain(env, fleet.single, fleet.replicas, say, (n) =>
      targets?.controller?.forget(n.instanceId),
    );
    const singleElb = elb?.calls.slice(elbBefore).filter((c) => c.agent === undefined) ?? [];
    say(`probing ${probe.target} as ${probe.user} for 30 s before the wave`);
    const beforeFrom = Date.now();
    await sleep(30_000);
    // Where the machine's CPU goes during the wave: the control plane's share, and this
    // process's (the Lambda containers, which in AWS run on machines of their own).
    const cpu = startCpuCount();
    const wave = await theWave(env, fleet, o, say);
    const cpuSeconds = cpu();
    probe.stop();
    const probed = await probeSummary(env, probe, beforeFrom, wave.startedMs, wave.endedMs);
    const loadBalancers =
      elb && targets && lb
        ? targetGroupSummary(elb, targets, lb, {
            fromMs: wave.startedMs,
            toMs: wave.endedMs,
            terminations: fleet.wave.length,
            released: wave.released,
            atMaximumWait: wave.releasedAt.maximumWait,
            atFallback: wave.releasedAt.fallback,
            ...wave.phases,
          })
        : undefined;
    const result = {
      measuredAt: new Date().toISOString(),
      handler: handler?.tree ?? 'this tree',
      nodes: o.nodes,
      waveSize: fleet.wave.length,
      podsPerNode: o.podsPerNode,
      deployments: apps.length,
      budgets: `minAvailable ${Math.round((1 - budgetShare) * 100)}% of each Deployment`,
      nodeJsonBytes: fleet.nodeJsonBytes,
      notificationWindowSeconds: notificationWindowMs / 1000,
      concurrency:
        'every notification its own invocation, in a fresh container unless one is free; hand-offs the same; a failed invocation retried after 1 and 2 minutes',
      rateLimits: rateLimitsOf(rateLimits(o.autoScalingBucket)),
      singleDrain: elb
        ? { ...single, elbCalls: singleElb.length, elbThrottled: singleElb.filter((c) => c.throttled).length }
        : single,
      ...wave.summary,
      requestsPerNodeRatio: round(wave.summary.requestsPerNode / single.requests),
      bytesPerNodeRatio: round(wave.summary.bytesPerNode / single.responseBytes),
      slowestShutdownSeconds: Math.max(...shutdownDelaysSeconds),
      loadBalancerDelaySeconds: delaySeconds,
      ...(loadBalancers ? { waitForTargets: true, loadBalancers } : {}),
      ...probed,
      /** CPU seconds by process during the wave, on a machine of os.cpus().length cores. */
      cpuSeconds: {
        cores: os.cpus().length,
        waveSeconds: round((wave.endedMs - wave.startedMs) / 1000),
        ...cpuSeconds,
      },
    };
    say(
      `${result.waveSize} terminations: ${result.requestsPerNode} requests per node (single drain ${single.requests}, ratio ${result.requestsPerNodeRatio}), ${result.awsCallsPerTermination} AWS calls per termination, ${result.throttledCalls} throttled, ${result.invocationsFailed} invocations failed, last completion after ${result.lastCompletionSeconds} s, probe p99 ${probed.probe.p99BeforeMs} -> ${probed.probe.p99DuringMs} ms`,
    );
    if (loadBalancers)
      say(
        `ELB: ${loadBalancers.handlerCallsPerTermination} handler calls per termination, ${loadBalancers.handlerThrottled} of its calls and ${loadBalancers.controllerThrottled} of the controller's throttled; released ${loadBalancers.release.medianSeconds} s (median), ${loadBalancers.release.p99Seconds} s (p99) after the last group let go; ${loadBalancers.release.atMaximumWait} at the maximum wait, ${loadBalancers.release.atFallback} at the fixed delay, ${loadBalancers.release.releasedWhileHeld} while still held`,
      );
    return result;
  } finally {
    targets?.stop();
    await env.stop();
    await elb?.close();
  }
}

interface Fleet {
  readonly nodes: readonly FleetNode[];
  /** The nodes the wave terminates, spread over the group. */
  readonly wave: readonly FleetNode[];
  /** The node drained alone first: one the wave leaves. */
  readonly single: FleetNode;
  /** A node that neither the single drain nor the wave terminates (the probe reads it). */
  readonly staying: FleetNode;
  readonly replicas: number;
  readonly nodeJsonBytes: number;
}

async function createFleet(
  env: Environment,
  o: WaveOptions,
  say: (line: string) => void,
  lb: TargetGroupShape | undefined,
): Promise<Fleet> {
  say(`creating ${o.nodes} kwok nodes of EKS size`);
  const nodes = await createNodes(
    env,
    Array.from({ length: o.nodes }, (_, i) => i),
    lb ? { labels: slotLabels(lb) } : {},
  );
  await untilReady(env, new Set(nodes.map((n) => n.name)));
  const bytes = await nodeJsonBytes(env, nodes[0]!.name);
  const waveSize = Math.min(o.waveSize, o.nodes - 2);
  const waveIndexes = new Set(Array.from({ length: waveSize }, (_, k) => Math.floor((k * o.nodes) / waveSize)));
  const replicas = Math.round((o.nodes * o.podsPerNode) / apps.length);
  say(
    `${o.nodes} nodes Ready (${bytes} bytes of JSON each); ${apps.length} Deployments of ${replicas} replicas spread over them, under budgets`,
  );
  await createWorkloads(env, replicas);
  await settled(env, replicas, say);
  // The single drain: a node the wave leaves, running as many pods as a node has on average,
  // so the wave's requests per node compare with it like for like (evictions are most of them).
  const [single, staying] = await averageNode(
    env,
    nodes.filter((n) => !waveIndexes.has(n.index)),
    o.podsPerNode,
  );
  if (single === undefined || staying === undefined)
    throw new Error(`wave: --wave-size ${o.waveSize} leaves fewer than 2 of ${o.nodes} nodes`);
  return {
    nodes,
    wave: [...waveIndexes].map((i) => nodes[i]!),
    single,
    staying,
    replicas,
    nodeJsonBytes: bytes,
  };
}

/** The wave itself: notifications within the window, invocations counted, retried as Lambda does. */
async function theWave(env: Environment, fleet: Fleet, o: WaveOptions, say: (line: string) => void) {
  const originals = await running(env);
  const originalNames = new Set(originals.map((p) => p.metadata!.name!));
  const doomedNames = new Set(fleet.wave.map((n) => n.name));
  const onDoomed = originals.filter((p) => doomedNames.has(p.spec?.nodeName ?? '')).length;
  const lambda = playLambda(env);
  // Which instances the handler released at the maximum wait, or at the fixed delay (its log lines carry the instance).
  const releasedAt = { maximumWait: new Set<string>(), fallback: new Set<string>() };
  // When each drain ended (drained, or at its deadline) and when its settle saw the groups let it go: a release
  // waits for the drain as much as for the load balancers, and the reading's own lag is told apart.
  const phases = { drainedAtMs: new Map<string, number>(), letGoSeenAtMs: new Map<string, number>() };
  const waveIds = new Set(fleet.wave.map((n) => n.instanceId));
  env.onHandlerLog((log) => {
    const message = String(log['message']);
    const id = String(log['instanceId'] ?? '');
    if (!waveIds.has(id)) return;
    if (message.startsWith('releasing while load balancers still hold the instance')) releasedAt.maximumWait.add(id);
    if (message.startsWith('could not read the load balancers (')) releasedAt.fallback.add(id);
    const drained = message === 'node drained' || message.startsWith('drain deadline reached');
    if (drained && !phases.drainedAtMs.has(id)) phases.drainedAtMs.set(id, Date.now());
    // Told once per look that saw a group let go: the last one is the settle seeing the last group.
    if (message.startsWith('load balancers let the instance go')) phases.letGoSeenAtMs.set(id, Date.now());
  });

  // Auto Scaling picks the whole wave at once; the notifications follow, jittered.
  for (const n of fleet.wave) env.aws.instances.get(n.instanceId)!.lifecycleState = 'Terminating:Wait';
  const random = seeded(21);
  const offsets = fleet.wave.map(() => Math.round(random() * notificationWindowMs)).sort((x, y) => x - y);
  const first = offsets[0]!;
  const tokens = new Map<string, { instanceId: string; notifiedMs: number }>();
  let sent = 0;
  await sleep(300);
  const answers = env.proxy!.counts.answers.length;
  const containersBefore = env.containers();
  const startedMs = Date.now();
  lambda.start();
  say(`${fleet.wave.length} terminations of ${o.nodes} nodes, notifications within ${notificationWindowMs / 1000} s`);
  fleet.wave.forEach((n, i) =>
    setTimeout(() => {
      const { token, notifiedMs, event } = env.notify(n.instanceId);
      tokens.set(token, { instanceId: n.instanceId, notifiedMs });
      sent++;
      env.deliver(event).catch(() => undefined);
    }, offsets[i]! - first),
  );
  const completions = () =>
    env.aws.calls.filter(
      (c) =>
        c.action === 'CompleteLifecycleAction' &&
        c.outcome === 'ok' &&
        tokens.has(c.params['LifecycleActionToken'] ?? ''),
    );
  let lastSaid = 0;
  const invocations = lambda.invocations;
  await until(
    'the wave to end (every invocation and retry over)',
    30 * 60_000,
    async () => {
      const done = completions().length;
      if (Date.now() - lastSaid > 10_000) {
        lastSaid = Date.now();
        say(
          `${done} of ${fleet.wave.length} actions completed; ${invocations.inFlight} invocations running, ${invocations.failed} failed`,
        );
      }
      return sent === fleet.wave.length && lambda.idle();
    },
    250,
  );
  const endedMs = Date.now();
  lambda.stop();
  await sleep(1_000);
  const requests = readAudit(env.plane, (e) => byDrainer(e) && e.receivedMs >= startedMs - 50);
  const bytes = env.proxy!.counts.answers.slice(answers).reduce((s, x) => s + x.bytes, 0);
  const done = completions();
  const completedTokens = new Set(done.map((c) => c.params['LifecycleActionToken']));
  const perTermination = done
    .map((c) => (c.atMs - tokens.get(c.params['LifecycleActionToken']!)!.notifiedMs) / 1000)
    .sort((x, y) => x - y);
  const evictions = requests.filter((e) => e.subresource === 'eviction' && e.code === 201 && e.namespace === namespace);
  const aws = env.aws.calls.filter((c) => c.atMs >= startedMs && c.atMs <= endedMs);
  const notifiedMsByNode = new Map(
    [...tokens.values()].map((t) => [fleet.wave.find((n) => n.instanceId === t.instanceId)!.name, t.notifiedMs]),
  );
  const evictedTwice = traceTwiceEvicted(
    {
      evictedTwice: evictions.filter((e) => !originalNames.has(e.name ?? '')),
      bindings: readAudit(env.plane, (e) => e.subresource === 'binding' && e.namespace === namespace),
      requests,
      notifiedMsByNode,
    },
    startedMs,
  );
  const summary = {
    requestsPerNode: round(requests.length / fleet.wave.length),
    bytesPerNode: Math.round(bytes / fleet.wave.length),
    ...spanSummary(requests, aws, lambda, env.containers() - containersBefore),
    awsCallsPerTermination: round(aws.length / fleet.wave.length),
    /** The same without the throttled attempts: the calls AWS answered. */
    awsCallsAnsweredPerTermination: round(aws.filter((c) => c.outcome !== 'throttled').length / fleet.wave.length),
    actionsCompleted: completedTokens.size,
    actionsCompletedExactlyOnce: completedTokens.size === fleet.wave.length && done.length === fleet.wave.length,
    completeAfterDone: aws.filter((c) => c.action === 'CompleteLifecycleAction' && c.outcome === 'no-active-action')
      .length,
    originalPodsOnTerminated: onDoomed,
    podsPerTerminatedNode: round(onDoomed / fleet.wave.length),
    evictions: evictions.length,
    evictionsPerOriginalPod: round(evictions.length / Math.max(1, onDoomed)),
    podsEvictedTwice: evictedTwice.length,
    /** Each pod evicted twice: its node, and when it was bound, notified and first marked (wave-twice.ts). */
    evictedTwice,
    /** When the wave's nodes were marked, against the first eviction (wave-twice.ts). */
    marking: markCoverage(
      requests,
      fleet.wave.map((n) => n.name),
      startedMs,
    ),
    lastCompletionSeconds: done.length ? round((Math.max(...done.map((c) => c.atMs)) - startedMs) / 1000) : undefined,
    lastNotificationSeconds: round((offsets.at(-1)! - first) / 1000),
    terminationSecondsMedian: round(perTermination[Math.floor(perTermination.length / 2)] ?? 0),
    terminationSecondsMax: round(perTermination.at(-1) ?? 0),
  };
  const released = done.map((c) => ({
    instanceId: tokens.get(c.params['LifecycleActionToken']!)!.instanceId,
    releasedAtMs: c.atMs,
  }));
  return { startedMs, endedMs, summary, released, releasedAt, phases };
}
