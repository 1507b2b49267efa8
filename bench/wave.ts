// The wave section of `npm run bench` (issue 21): a group of --wave-nodes kwok nodes of
// realistic size (EKS labels, conditions, 44 images, managedFields) running Deployments spread
// over every node under budgets, and --wave-size of them terminated at once, their
// notifications arriving within 10 s (jittered as SNS fans them out). The local AWS endpoints
// enforce token-bucket rate limits (demo/aws-rate-limits.ts). Every notification is its own
// invocation in a container of its own unless one is free (Lambda scaling out); hand-offs are
// delivered the same way; a failed invocation is retried twice, 1 and 2 minutes later, as
// Lambda retries an asynchronous (SNS) invocation. A single drain on the same plane first is
// the yardstick for the wave's per-node cost. Kubernetes requests come from the audit log,
// bytes from the counting proxy in front of the API server, AWS calls from the local endpoint.
// A probe client (a ServiceAccount whose FlowSchema puts it in global-default) GETs a node in
// a loop before and during the wave.
// --handler-tree <dir> runs the same wave again, on a fresh plane, with that tree's handler
// (its lambda/runtime.ts), written beside this one's under wave.previous.
import { execFileSync, spawn } from 'node:child_process';
import os from 'node:os';
import { createInterface } from 'node:readline';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { V1Node } from '@kubernetes/client-node';
import { awsLikeRateLimits, type RateLimit } from '../demo/aws-rate-limits.js';
import { groupName, startEnvironment, type Environment, type EnvironmentOptions } from '../demo/environment.js';
import { seeded } from '../test/cluster/fault-proxy.js';
import {
  byDrainer,
  createDeployment,
  createPdb,
  ensureNamespace,
  readAudit,
  sleep,
  until,
} from '../test/cluster/kube.js';
import { fillerNode, peakConcurrency, round } from './fleet.js';
import { startCpuCount } from './process-cpu.js';
import { kindOf, requestsByKind } from './wire.js';

export interface WaveOptions {
  readonly say: (line: string) => void;
  readonly nodes: number;
  readonly waveSize: number;
  readonly podsPerNode: number;
  /** Auto Scaling's one bucket for every action (AWS publishes no numbers): 40 tokens, 10 a second by default. */
  readonly autoScalingBucket?: { readonly capacity: number; readonly refillPerSecond: number };
  /** Another tree whose handler is measured the same way after this one's (wave.previous). */
  readonly handlerTree?: string;
  /** Waits until the machine is free of other planes (bench/machine.ts), before the second plane. */
  readonly beforeEachPlane?: () => Promise<void>;
}

/** Pods shut down in 1 to 5 s; the handler waits this fixed delay for the load balancers (WAIT_FOR_TARGETS=false). */
const shutdownDelaysSeconds = [1, 2, 3, 4, 5];
const loadBalancerDelaySeconds = 2;
/** Ten Deployments, each spread over every node; budgets let a fifth of each go at a time. */
const apps = Array.from({ length: 10 }, (_, i) => `app-${i + 1}`);
const budgetShare = 0.2;
const notificationWindowMs = 10_000;
/** Lambda retries a failed asynchronous invocation twice: after about 1 and 2 minutes. */
const retryDelaysMs = [60_000, 120_000];
const namespace = 'wave';
const probeUser = 'system:serviceaccount:bench-probe:probe';
const zones = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'];

export async function runWaveSection(o: WaveOptions): Promise<Record<string, unknown>> {
  const current = await runWave(o, undefined);
  if (o.handlerTree === undefined) return current;
  const { createRuntime } = (await import(pathToFileURL(join(o.handlerTree, 'lambda', 'runtime.ts')).href)) as {
    createRuntime: NonNullable<EnvironmentOptions['createHandler']>;
  };
  await o.beforeEachPlane?.();
  const previous = await runWave(o, { tree: o.handlerTree, createHandler: createRuntime });
  const commit = execFileSync('git', ['-C', o.handlerTree, 'rev-parse', '--short', 'HEAD'], {
    encoding: 'utf8',
  }).trim();
  return { ...current, previous: { ...previous, commit } };
}

interface Handler {
  readonly tree: string;
  readonly createHandler: NonNullable<EnvironmentOptions['createHandler']>;
}

async function runWave(o: WaveOptions, handler: Handler | undefined): Promise<Record<string, unknown>> {
  const say = (line: string) => o.say(`wave${handler ? ' (previous)' : ''}: ${line}`);
  const env = await startEnvironment({
    log: say,
    loadBalancerDelaySeconds,
    drainTimeoutSeconds: 600,
    countBytes: true,
    // The probe's requests too: the API server's own timing of them (serverLatenciesMs).
    auditUsers: [probeUser],
    awsRateLimits: rateLimits(o),
    containerPerInvocation: true,
    // kube-controller-manager at 200 requests a second (not 20): the ReplicaSets must replace a
    // wave's evicted pods as fast as a real control plane does, or the budgets measure it.
    manyNodesWithoutKubelet: true,
    ...(handler ? { createHandler: handler.createHandler } : {}),
  });
  try {
    const fleet = await createFleet(env, o, say);
    const probe = await startProbe(env, fleet.staying.name);
    const single = await singleDrain(env, fleet, say);
    say(`probing ${probe.target} as ${probe.user} for 30 s before the wave`);
    const beforeFrom = Date.now();
    await sleep(30_000);
    // Where the machine's CPU goes during the wave: the control plane's share, and this
    // process's (the Lambda containers, which in AWS run on machines of their own).
    const cpu = startCpuCount();
    const wave = await theWave(env, fleet, o, say);
    const cpuSeconds = cpu();
    probe.stop();
    const before = percentile(probe.latenciesMs(beforeFrom, wave.startedMs), 0.99);
    const during = percentile(probe.latenciesMs(wave.startedMs, wave.endedMs), 0.99);
    const serverBefore = percentile(serverLatenciesMs(env, beforeFrom, wave.startedMs), 0.99);
    const serverDuring = percentile(serverLatenciesMs(env, wave.startedMs, wave.endedMs), 0.99);
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
      rateLimits: rateLimitsOf(rateLimits(o)),
      singleDrain: single,
      ...wave.summary,
      requestsPerNodeRatio: round(wave.summary.requestsPerNode / single.requests),
      bytesPerNodeRatio: round(wave.summary.bytesPerNode / single.responseBytes),
      slowestShutdownSeconds: Math.max(...shutdownDelaysSeconds),
      loadBalancerDelaySeconds,
      probe: {
        user: probe.user,
        priorityLevel: await probe.priorityLevel(),
        target: probe.target,
        p99BeforeMs: round(before),
        p99DuringMs: round(during),
        samples: probe.count(),
      },
      probeP99Ratio: round(during / before),
      /** CPU seconds by process during the wave, on a machine of os.cpus().length cores. */
      cpuSeconds: {
        cores: os.cpus().length,
        waveSeconds: round((wave.endedMs - wave.startedMs) / 1000),
        ...cpuSeconds,
      },
      /** The probe's requests as the API server timed them (the audit log's received → complete, ms resolution). */
      probeServerP99Ms: { before: round(serverBefore), during: round(serverDuring) },
    };
    say(
      `${result.waveSize} terminations: ${result.requestsPerNode} requests per node (single drain ${single.requests}, ratio ${result.requestsPerNodeRatio}), ${result.awsCallsPerTermination} AWS calls per termination, ${result.throttledCalls} throttled, ${result.invocationsFailed} invocations failed, last completion after ${result.lastCompletionSeconds} s, probe p99 ${round(before)} -> ${round(during)} ms`,
    );
    return result;
  } finally {
    await env.stop();
  }
}

interface Fleet {
  readonly nodes: readonly { name: string; instanceId: string }[];
  /** The nodes the wave terminates, spread over the group. */
  readonly wave: readonly { name: string; instanceId: string }[];
  /** The node drained alone first: one the wave leaves. */
  readonly single: { name: string; instanceId: string };
  /** A node that neither the single drain nor the wave terminates (the probe reads it). */
  readonly staying: { name: string; instanceId: string };
  readonly replicas: number;
  readonly nodeJsonBytes: number;
}

/** An EKS-sized worker (bench/fleet.ts's stand-in), but kwok's: it runs pods. */
function waveNode(i: number): { node: V1Node; instanceId: string } {
  const base = fillerNode(i, zones[i % zones.length]!);
  const { 'bench/filler': _filler, ...labels } = base.metadata!.labels!;
  const instanceId = base.spec!.providerID!.split('/').at(-1)!;
  // No conditions: kwok's node-initialize stage writes them (Ready), keeping nodeInfo, images and addresses.
  const { conditions: _conditions, ...status } = base.status!;
  return {
    instanceId,
    node: {
      metadata: {
        ...base.metadata,
        labels: { ...labels, 'eks.amazonaws.com/nodegroup': groupName },
        annotations: { ...base.metadata!.annotations, 'kwok.x-k8s.io/node': 'fake' },
      },
      spec: { providerID: base.spec!.providerID },
      status,
    },
  };
}

async function createFleet(env: Environment, o: WaveOptions, say: (line: string) => void): Promise<Fleet> {
  const a = env.admin;
  say(`creating ${o.nodes} kwok nodes of EKS size`);
  const nodes: { name: string; instanceId: string }[] = [];
  let next = 0;
  const create = async () => {
    for (let i = next++; i < o.nodes; i = next++) {
      const { node, instanceId } = waveNode(i);
      await a.core.createNode({ body: node });
      env.aws.instances.set(instanceId, {
        privateDnsName: node.metadata!.name!,
        group: groupName,
        lifecycleState: 'InService',
      });
      nodes[i] = { name: node.metadata!.name!, instanceId };
    }
  };
  await Promise.all(Array.from({ length: 16 }, create));
  await until(
    `${o.nodes} nodes Ready and untainted`,
    600_000,
    async () => {
      const list = (await a.core.listNode({ labelSelector: `eks.amazonaws.com/nodegroup=${groupName}` })).items;
      const ready = list.filter(
        (n) =>
          n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') &&
          (n.spec?.taints ?? []).length === 0,
      );
      return ready.length === o.nodes;
    },
    2_000,
  );
  const nodeJsonBytes = Buffer.byteLength(JSON.stringify(await a.core.readNode({ name: nodes[0]!.name })));
  const waveSize = Math.min(o.waveSize, o.nodes - 2);
  const waveIndexes = new Set(Array.from({ length: waveSize }, (_, k) => Math.floor((k * o.nodes) / waveSize)));

  const replicas = Math.round((o.nodes * o.podsPerNode) / apps.length);
  say(
    `${o.nodes} nodes Ready (${nodeJsonBytes} bytes of JSON each); ${apps.length} Deployments of ${replicas} replicas spread over them, under budgets`,
  );
  await ensureNamespace(a, namespace);
  for (const [k, app] of apps.entries()) {
    await createDeployment(a, namespace, app, replicas, {
      deleteDelay: `${shutdownDelaysSeconds[k % shutdownDelaysSeconds.length]}s`,
      spreadOverNodes: true,
    });
    await createPdb(a, namespace, app, app, replicas - Math.ceil(replicas * budgetShare));
  }
  await settled(env, replicas, say);
  // The single drain: a node the wave leaves, running as many pods as a node has on average,
  // so the wave's requests per node compare with it like for like (evictions are most of them).
  const podsOn = new Map<string, number>();
  for (const p of await running(env)) podsOn.set(p.spec?.nodeName ?? '', (podsOn.get(p.spec?.nodeName ?? '') ?? 0) + 1);
  const left = [...nodes.keys()]
    .filter((i) => !waveIndexes.has(i))
    .sort(
      (x, y) =>
        Math.abs((podsOn.get(nodes[x]!.name) ?? 0) - o.podsPerNode) -
        Math.abs((podsOn.get(nodes[y]!.name) ?? 0) - o.podsPerNode),
    );
  const [singleIndex, stayingIndex] = left;
  if (singleIndex === undefined || stayingIndex === undefined)
    throw new Error(`wave: --wave-size ${o.waveSize} leaves fewer than 2 of ${o.nodes} nodes`);
  return {
    nodes,
    wave: [...waveIndexes].map((i) => nodes[i]!),
    single: nodes[singleIndex]!,
    staying: nodes[stayingIndex]!,
    replicas,
    nodeJsonBytes,
  };
}

/** Every replica Running and every budget at full health. */
async function settled(env: Environment, replicas: number, say: (line: string) => void): Promise<void> {
  const a = env.admin;
  const total = replicas * apps.length;
  await until(
    `${total} replicas Running, budgets at full health`,
    900_000,
    async () => {
      const up = (await running(env)).length;
      const budgets = (await a.policy.listNamespacedPodDisruptionBudget({ namespace })).items;
      const healthy = budgets.filter(
        (b) => b.status?.currentHealthy === replicas && b.status?.observedGeneration === b.metadata?.generation,
      ).length;
      if (up < total) say(`${up} of ${total} replicas Running`);
      return up === total && healthy === apps.length;
    },
    3_000,
  );
}

async function running(env: Environment) {
  return (await env.admin.core.listNamespacedPod({ namespace })).items.filter(
    (p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp,
  );
}

/** One termination alone, on the same plane: the yardstick for the wave's per-node cost. */
async function singleDrain(env: Environment, fleet: Fleet, say: (line: string) => void) {
  const n = fleet.single;
  const pods = (await running(env)).filter((p) => p.spec?.nodeName === n.name).length;
  await sleep(500);
  const answers = env.proxy!.counts.answers.length;
  const started = Date.now();
  const run = await env.terminate(n.instanceId);
  const done = env.aws.calls.find(
    (c) =>
      c.action === 'CompleteLifecycleAction' && c.outcome === 'ok' && c.params['LifecycleActionToken'] === run.token,
  );
  if (done === undefined)
    throw new Error(`wave: the single drain of ${n.name} did not complete its action: ${JSON.stringify(run.result)}`);
  await sleep(1_000);
  const requests = readAudit(env.plane, (e) => byDrainer(e) && e.receivedMs >= started - 50);
  const single = {
    node: n.name,
    pods,
    requests: requests.length,
    responseBytes: env.proxy!.counts.answers.slice(answers).reduce((s, x) => s + x.bytes, 0),
    seconds: round((done.atMs - run.notifiedMs) / 1000),
    awsCalls: env.aws.calls.filter((c) => c.atMs >= started).length,
    requestsByKind: requestsByKind(requests),
  };
  say(
    `single drain of ${n.name} (${pods} pods): ${single.requests} requests, ${single.responseBytes} bytes, ${single.seconds} s`,
  );
  // Its instance terminates (as in AWS, a minute after CONTINUE): the group forgets it, the node goes.
  env.aws.instances.delete(n.instanceId);
  await env.admin.core.deleteNode({ name: n.name });
  await settled(env, fleet.replicas, say);
  return single;
}

/** The wave itself: notifications within the window, invocations counted, retried as Lambda does. */
async function theWave(env: Environment, fleet: Fleet, o: WaveOptions, say: (line: string) => void) {
  const originals = await running(env);
  const originalNames = new Set(originals.map((p) => p.metadata!.name!));
  const doomedNames = new Set(fleet.wave.map((n) => n.name));
  const onDoomed = originals.filter((p) => doomedNames.has(p.spec?.nodeName ?? '')).length;
  const invocations = {
    started: 0,
    handOffs: 0,
    failed: 0,
    retried: 0,
    inFlight: 0,
    retriesDue: 0,
    failures: [] as string[],
  };
  const attempts = new WeakMap<object, number>();
  let counting = false;
  env.onInvocation((inv) => {
    if (!counting) return;
    invocations.started++;
    invocations.inFlight++;
    if (inv.handOff) invocations.handOffs++;
    inv.run
      .catch((error: unknown) => {
        invocations.failed++;
        invocations.failures.push((error as Error).message);
        const n = attempts.get(inv.event as object) ?? 0;
        if (n >= retryDelaysMs.length) return;
        attempts.set(inv.event as object, n + 1);
        invocations.retriesDue++;
        setTimeout(() => {
          invocations.retriesDue--;
          invocations.retried++;
          env.deliver(inv.event).catch(() => undefined);
        }, retryDelaysMs[n]);
      })
      .finally(() => invocations.inFlight--);
  });
  let awsCallsReported = 0;
  const handlerLog = newHandlerLogStats();
  env.onHandlerLog((log) => {
    if (!counting) return;
    const calls =
      log['message'] === 'termination handled' ? (log['awsCalls'] as Record<string, number> | undefined) : undefined;
    if (calls) awsCallsReported += Object.values(calls).reduce((s, n) => s + n, 0);
    handlerLog.add(log);
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
  counting = true;
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
      return sent === fleet.wave.length && invocations.inFlight === 0 && invocations.retriesDue === 0;
    },
    250,
  );
  const endedMs = Date.now();
  counting = false;
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
  const summary = {
    requestsPerNode: round(requests.length / fleet.wave.length),
    bytesPerNode: Math.round(bytes / fleet.wave.length),
    requestsByKind: requestsByKind(requests),
    /** The refused ones among them, by kind and status (a budget's 429, a conflict's 409, APF's 429). */
    refusedByKind: refusedByKind(requests),
    peakRequestsInFlight: peakConcurrency(requests.filter((e) => e.verb !== 'watch')),
    throttled429: requests.filter((e) => e.code === 429 && !/disruption budget/i.test(e.message)).length,
    awsCallsPerTermination: round(aws.length / fleet.wave.length),
    /** The same without the throttled attempts: the calls AWS answered. */
    awsCallsAnsweredPerTermination: round(aws.filter((c) => c.outcome !== 'throttled').length / fleet.wave.length),
    awsCallsReportedByHandler: awsCallsReported,
    awsCalls: awsByAction(aws),
    throttledCalls: aws.filter((c) => c.outcome === 'throttled').length,
    invocations: invocations.started,
    containers: env.containers() - containersBefore,
    handOffs: invocations.handOffs,
    invocationsFailed: invocations.failed,
    invocationsRetried: invocations.retried,
    failures: [...new Set(invocations.failures)].slice(0, 5),
    handlerLog: handlerLog.result(),
    actionsCompleted: completedTokens.size,
    actionsCompletedExactlyOnce: completedTokens.size === fleet.wave.length && done.length === fleet.wave.length,
    completeAfterDone: aws.filter((c) => c.action === 'CompleteLifecycleAction' && c.outcome === 'no-active-action')
      .length,
    originalPodsOnTerminated: onDoomed,
    podsPerTerminatedNode: round(onDoomed / fleet.wave.length),
    evictions: evictions.length,
    evictionsPerOriginalPod: round(evictions.length / Math.max(1, onDoomed)),
    podsEvictedTwice: evictions.filter((e) => !originalNames.has(e.name ?? '')).length,
    lastCompletionSeconds: done.length ? round((Math.max(...done.map((c) => c.atMs)) - startedMs) / 1000) : undefined,
    lastNotificationSeconds: round((offsets.at(-1)! - first) / 1000),
    terminationSecondsMedian: round(perTermination[Math.floor(perTermination.length / 2)] ?? 0),
    terminationSecondsMax: round(perTermination.at(-1) ?? 0),
  };
  return { startedMs, endedMs, summary };
}

/**
 * What the handler logged during the wave: WARN and ERROR lines by message, the first distinct
 * errors with where they came from, and how many sibling nodes its drains marked ahead.
 */
function newHandlerLogStats() {
  const warnings: Record<string, number> = {};
  const errors: Record<string, number> = {};
  const samples = new Set<string>();
  let siblingsMarkedAhead = 0;
  let siblingMarkings = 0;
  return {
    add(log: Record<string, unknown>) {
      const message = String(log['message']);
      if (message === "marked the nodes of the group's other leaving instances before evicting") {
        siblingMarkings++;
        siblingsMarkedAhead += Number(log['marked'] ?? 0);
      }
      if (log['level'] === 'WARN') warnings[message] = (warnings[message] ?? 0) + 1;
      if (log['level'] !== 'ERROR' && log['level'] !== 'WARN') return;
      if (log['level'] === 'ERROR') errors[message] = (errors[message] ?? 0) + 1;
      const error = (log['error'] ?? log['cause']) as
        { name?: string; message?: string; location?: string } | undefined;
      if (error && samples.size < 8)
        samples.add(
          `${String(log['level'])} ${message}: ${error.name ?? ''} ${error.message ?? ''} at ${error.location ?? '?'}`,
        );
    },
    result: () => ({ warnings, errors, samples: [...samples], siblingMarkings, siblingsMarkedAhead }),
  };
}

function refusedByKind(
  requests: readonly {
    verb: string;
    resource: string;
    subresource: string | undefined;
    code: number;
    message: string;
  }[],
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of requests) {
    if (e.code < 300) continue;
    const why = e.code === 429 ? (/disruption budget/i.test(e.message) ? ' (budget)' : ' (APF)') : '';
    const key = `${kindOf(e)} ${e.code}${why}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

function awsByAction(
  calls: readonly { action: string; outcome: string }[],
): Record<string, { calls: number; throttled: number }> {
  const out: Record<string, { calls: number; throttled: number }> = {};
  for (const c of calls) {
    const row = (out[c.action] ??= { calls: 0, throttled: 0 });
    row.calls++;
    if (c.outcome === 'throttled') row.throttled++;
  }
  return out;
}

function rateLimits(o: WaveOptions): readonly RateLimit[] {
  const bucket = o.autoScalingBucket;
  return bucket === undefined
    ? awsLikeRateLimits
    : awsLikeRateLimits.map((l) => (l.service === 'autoscaling' ? { ...l, ...bucket } : l));
}

function rateLimitsOf(limits: readonly RateLimit[]) {
  return limits.map((l) => ({
    family: l.family,
    capacity: l.capacity,
    refillPerSecond: l.refillPerSecond,
    bucket: l.perAction ? 'one per action' : 'one for the family',
  }));
}

interface Probe {
  readonly user: string;
  readonly target: string;
  latenciesMs(fromMs: number, toMs: number): number[];
  count(): { answered: number; failed: number };
  priorityLevel(): Promise<string>;
  stop(): void;
}

/**
 * Another tenant: a ServiceAccount whose own FlowSchema puts it in global-default (as a user
 * matched by no other schema lands), GETting one node in a loop, ten times a second, from a
 * process of its own (bench/probe-client.ts): this process plays 200 Lambda containers, and a
 * probe on its event loop would time the loop, not the API server.
 */
async function startProbe(env: Environment, node: string): Promise<Probe> {
  const a = env.admin;
  const file = join(env.plane.dir, 'probe.yaml');
  writeFileSync(file, probeManifests());
  a.kubectl('apply', '-f', file);
  const token = (
    await a.core.createNamespacedServiceAccountToken({
      namespace: 'bench-probe',
      name: 'probe',
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    })
  ).status!.token;
  const caFile = join(env.plane.dir, 'probe-ca.pem');
  writeFileSync(caFile, env.plane.caPem);
  const target = `/api/v1/nodes/${node}`;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, 'probe-client.ts'), env.plane.server, target],
    {
      env: { ...process.env, PROBE_TOKEN: token, PROBE_CA_FILE: caFile },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const samples: { atMs: number; ms: number }[] = [];
  let failed = 0;
  let levelUid = '';
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const s = JSON.parse(line) as { atMs: number; ms: number; ok: boolean; level: string };
    if (s.level) levelUid = s.level;
    if (s.ok) samples.push(s);
    else failed++;
  });
  await until('the probe answered', 30_000, async () => samples.length > 0);
  return {
    user: probeUser,
    target: `GET ${target}`,
    latenciesMs: (fromMs, toMs) => samples.filter((s) => s.atMs >= fromMs && s.atMs < toMs).map((s) => s.ms),
    count: () => ({ answered: samples.length, failed }),
    async priorityLevel() {
      const levels = JSON.parse(a.kubectl('get', 'prioritylevelconfigurations', '-o', 'json')) as {
        items: { metadata: { name: string; uid: string } }[];
      };
      return levels.items.find((l) => l.metadata.uid === levelUid)?.metadata.name ?? `unknown (${levelUid})`;
    },
    stop: () => void child.kill('SIGTERM'),
  };
}

/** The same probe's requests as the API server timed them (audit: received to response complete). */
function serverLatenciesMs(env: Environment, fromMs: number, toMs: number): number[] {
  return readAudit(
    env.plane,
    (e) => e.user === probeUser && e.receivedMs >= fromMs && e.receivedMs < toMs && e.verb === 'get',
  ).map((e) => e.atMs - e.receivedMs);
}

function probeManifests(): string {
  return `apiVersion: v1
kind: Namespace
metadata: { name: bench-probe }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: probe, namespace: bench-probe }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: bench-probe }
rules: [{ apiGroups: [""], resources: ["nodes"], verbs: ["get"] }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: bench-probe }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bench-probe }
subjects: [{ kind: ServiceAccount, name: probe, namespace: bench-probe }]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: { name: bench-probe }
spec:
  matchingPrecedence: 800
  priorityLevelConfiguration: { name: global-default }
  distinguisherMethod: { type: ByUser }
  rules:
    - subjects: [{ kind: ServiceAccount, serviceAccount: { name: probe, namespace: bench-probe } }]
      resourceRules: [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"] }]
`;
}

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

type Results = Record<string, unknown>;

/** The wave's numbers, this tree's beside the previous version's when it ran, with the issue's targets. */
export function waveTable(w: Results): string {
  const p = w['previous'] as Results | undefined;
  const cell = (r: Results | undefined, key: string, unit = '') => {
    const v = key
      .split('.')
      .reduce<unknown>((x, k) => (typeof x === 'object' && x !== null ? (x as Results)[k] : undefined), r);
    return v === undefined ? '' : `${typeof v === 'number' ? String(v) : JSON.stringify(v)}${unit}`;
  };
  const budget = Number(w['slowestShutdownSeconds']) + Number(w['loadBalancerDelaySeconds']) + 15;
  const rows: [string, string, string, string?][] = [
    ['Kubernetes requests per terminated node / a single drain’s', 'requestsPerNodeRatio', '', '≤ 1.15'],
    ['requests per terminated node (single drain)', 'requestsPerNode', ''],
    ['single drain: requests', 'singleDrain.requests', ''],
    ['response bytes per terminated node / a single drain’s', 'bytesPerNodeRatio', ''],
    ['response bytes per terminated node', 'bytesPerNode', ' B'],
    ['single drain: response bytes', 'singleDrain.responseBytes', ' B'],
    ['AWS calls per termination (every call, throttled ones included)', 'awsCallsPerTermination', '', '≤ 6'],
    ['AWS calls answered (not throttled) per termination', 'awsCallsAnsweredPerTermination', ''],
    ['AWS calls throttled', 'throttledCalls', '', ''],
    ['invocations (hand-offs, Lambda retries) / containers', 'invocations', ''],
    ['invocations failed', 'invocationsFailed', '', '0'],
    ['actions completed (of the wave)', 'actionsCompleted', ''],
    ['every action completed exactly once', 'actionsCompletedExactlyOnce', '', 'true'],
    ['evictions per original pod', 'evictionsPerOriginalPod', '', '1.00'],
    ['pods evicted twice', 'podsEvictedTwice', '', '0'],
    ['last completion, from the first notification', 'lastCompletionSeconds', ' s', `≤ ${budget} s`],
    ['slowest termination, notification to completion', 'terminationSecondsMax', ' s'],
    ['peak drainer requests in flight (audit log)', 'peakRequestsInFlight', ''],
    ['APF 429s', 'throttled429', ''],
    ['probe p99 before → during (ms)', 'probe.p99BeforeMs', ''],
    ['probe p99 during / before', 'probeP99Ratio', '', '≤ 2'],
    ['probe p99 in the API server (audit) before → during (ms)', 'probeServerP99Ms.before', ''],
  ];
  const lines = [
    `| wave: ${w['waveSize']} of ${w['nodes']} nodes, ${w['podsPerNode']} pods each | this tree | previous | target |`,
    '|---|---|---|---|',
  ];
  for (const [label, key, unit, target] of rows) {
    const extra = (r: Results | undefined) =>
      key === 'invocations'
        ? ` (${cell(r, 'handOffs')} hand-offs, ${cell(r, 'invocationsRetried')} retries) / ${cell(r, 'containers')}`
        : key === 'probe.p99BeforeMs'
          ? ` → ${cell(r, 'probe.p99DuringMs')}`
          : key === 'probeServerP99Ms.before'
            ? ` → ${cell(r, 'probeServerP99Ms.during')}`
            : '';
    lines.push(
      `| ${label} | ${cell(w, key, unit)}${extra(w)} | ${p ? `${cell(p, key, unit)}${extra(p)}` : ''} | ${target ?? ''} |`,
    );
  }
  return lines.join('\n');
}
