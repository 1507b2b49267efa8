// The rotation section of `npm run bench` (issue 40): a group of --rotation-nodes kwok nodes of
// EKS size running 10 Deployments spread over every node under budgets (bench/wave-fleet.ts),
// every node replaced by an instance refresh as the `upgrade` command starts it (strategy
// default: launch before terminate, --rotation-batch-percent of the group at a time;
// scripts/refresh-preferences.ts), played by bench/rotation-refresh.ts: the refresh's Started
// event (the outdated nodes marked), then each batch's launches admitted by the launch hook and
// its terminations drained, every notification an asynchronous Lambda invocation with Lambda's
// retries, under the local AWS endpoint's rate limits. Reported: nodes rotated per hour,
// Kubernetes requests (audit log) and AWS calls (local endpoint) per node, notification to
// release per termination, pods evicted twice, a probe's p99 against the API server before and
// during (bench/wave-probe.ts), and the seats the drainer's priority level held
// (bench/apiserver-flow-metrics.ts). --handler-tree <dir> rotates again, on a fresh plane, with
// that tree's handler, written beside this one's under `previous`.
import os from 'node:os';
import { AutoScalingClient, StartInstanceRefreshCommand } from '@aws-sdk/client-auto-scaling';
import { groupName, type Environment } from '../demo/environment.js';
import { localLaunchTemplate, type LocalRefresh } from '../demo/local-aws.js';
import { rbacName } from '../lambda/installer/rbac.js';
import { startRefreshInput } from '../scripts/refresh-preferences.js';
import { byDrainer, readAudit, sleep, until } from '../test/cluster/kube.js';
import { testAws } from '../test/cluster/plane/token-webhook.js';
import { fillerNode, round } from './fleet.js';
import { sampleSeats } from './apiserver-flow-metrics.js';
import { startCpuCount } from './process-cpu.js';
import { startPeakMemory } from './process-memory.js';
import { census, type Census } from './rotation-census.js';
import { playRefresh } from './rotation-refresh.js';
import {
  apps,
  budgetShare,
  createNodes,
  createWorkloads,
  namespace,
  nodeJsonBytes,
  running,
  settled,
  untilReady,
} from './wave-fleet.js';
import { playLambda } from './wave-lambda.js';
import { percentile, probeSummary, startProbe } from './wave-probe.js';
import { rateLimitsOf, spanSummary } from './wave-report.js';
import {
  fleetEnvironment,
  rateLimits,
  thisAndPrevious,
  type Handler,
  type SectionOptions,
} from './wave-environment.js';

export interface RotationOptions extends SectionOptions {
  readonly nodes: number;
  readonly podsPerNode: number;
  /** Of the group, replaced at a time (the upgrade command's --max-unavailable-percentage). */
  readonly batchPercent: number;
  /** Counts where the moved pods went after each step (lists every pod: slows the rotation a little). */
  readonly census?: boolean;
}

export async function runRotationSection(o: RotationOptions): Promise<Record<string, unknown>> {
  return thisAndPrevious(o, (handler) => runRotation(o, handler));
}

async function runRotation(o: RotationOptions, handler: Handler | undefined): Promise<Record<string, unknown>> {
  const say = (line: string) => o.say(`rotation${handler ? ' (previous)' : ''}: ${line}`);
  const memory = startPeakMemory();
  const env = await fleetEnvironment(say, o, handler, { loadBalancerDelaySeconds: 2 });
  try {
    say(`creating ${o.nodes} kwok nodes of EKS size (launch template version 1)`);
    const old = await createNodes(
      env,
      Array.from({ length: o.nodes }, (_, i) => i),
      { version: '1' },
    );
    await untilReady(env, new Set(old.map((n) => n.name)), 20 * 60_000);
    const replicas = Math.round((o.nodes * o.podsPerNode) / apps.length);
    say(`${o.nodes} nodes Ready; ${apps.length} Deployments of ${replicas} replicas spread over them, under budgets`);
    await createWorkloads(env, replicas);
    await settled(env, replicas, say);
    // The probe reads a node the rotation leaves: one outside the served group (no kubelet, nothing runs on it).
    const probeNode = fillerNode(o.nodes + 50_000, 'eu-west-1a');
    await env.admin.core.createNode({ body: probeNode });
    const probe = await startProbe(env, probeNode.metadata!.name!);
    say(`probing ${probe.target} for 30 s before the rotation`);
    const beforeFrom = Date.now();
    await sleep(30_000);
    const originals = new Set((await running(env)).map((p) => p.metadata!.name!));
    const seats = await sampleSeats(env, rbacName);
    const cpu = startCpuCount();
    const lambda = playLambda(env);
    const answers = env.proxy!.counts.answers.length;
    const containersBefore = env.containers();
    lambda.start();
    // Where the moved pods went, after the Started event and each batch (the bench's own reads).
    const censuses: Census[] = [];
    const oldNames = new Set(old.map((n) => n.name));
    const afterStep = async (after: string) => {
      const c = await census(env, after, originals, oldNames);
      censuses.push(c);
      say(
        `after ${after}: ${c.oldNodesTainted} of ${c.oldNodes} old nodes tainted; ${c.movedPods} pods moved, ${c.movedOnOldNodes} of them onto old nodes (${c.movedOnTaintedOldNodes} tainted)`,
      );
    };
    const play = await startRefresh(env, o, old, { idle: lambda.idle, say, ...(o.census ? { afterStep } : {}) });
    await play.done;
    await until('every invocation and retry over', 10 * 60_000, async () => lambda.idle(), 500);
    const endedMs = Date.now();
    lambda.stop();
    const cpuSeconds = cpu();
    const flow = await seats.stop();
    probe.stop();
    await sleep(1_000);
    const startedMs = play.startedMs;
    const requests = readAudit(env.plane, (e) => byDrainer(e) && e.receivedMs >= startedMs - 50);
    const bytes = env.proxy!.counts.answers.slice(answers).reduce((s, x) => s + x.bytes, 0);
    const aws = env.aws.calls.filter((c) => c.atMs >= startedMs && c.atMs <= endedMs);
    const evictions = requests.filter(
      (e) => e.subresource === 'eviction' && e.code === 201 && e.namespace === namespace,
    );
    const releases = play.terminations
      .filter((t) => t.completedMs !== undefined)
      .map((t) => (t.completedMs! - t.notifiedMs) / 1000)
      .sort((x, y) => x - y);
    const rotationSeconds = (play.endedMs - startedMs) / 1000;
    const probed = await probeSummary(env, probe, beforeFrom, startedMs, endedMs);
    const result = {
      measuredAt: new Date().toISOString(),
      handler: handler?.tree ?? 'this tree',
      nodes: o.nodes,
      podsPerNode: o.podsPerNode,
      deployments: apps.length,
      budgets: `minAvailable ${Math.round((1 - budgetShare) * 100)}% of each Deployment`,
      nodeJsonBytes: await nodeJsonBytes(env, probeNode.metadata!.name!),
      refresh: {
        strategy: 'default (launch before terminate)',
        batchPercent: o.batchPercent,
        batches: play.batches.length,
        batchTimings: play.batches,
        /** Pods moved since the start on old nodes (each to be evicted again), after each step. */
        census: censuses,
      },
      rateLimits: rateLimitsOf(rateLimits(o.autoScalingBucket)),
      rotated: play.terminations.filter((t) => t.completedMs !== undefined).length,
      rotationSeconds: round(rotationSeconds),
      nodesPerHour: Math.round((o.nodes / rotationSeconds) * 3600),
      requestsPerNode: round(requests.length / o.nodes),
      bytesPerNode: Math.round(bytes / o.nodes),
      ...spanSummary(requests, aws, lambda, env.containers() - containersBefore),
      awsCallsPerNode: round(aws.length / o.nodes),
      awsCallsAnsweredPerNode: round(aws.filter((c) => c.outcome !== 'throttled').length / o.nodes),
      releaseSeconds: {
        median: round(percentile(releases, 0.5)),
        p99: round(percentile(releases, 0.99)),
        max: round(releases.at(-1) ?? Number.NaN),
      },
      originalPods: originals.size,
      evictions: evictions.length,
      evictionsPerOriginalPod: round(evictions.length / Math.max(1, originals.size)),
      podsEvictedTwice: evictions.filter((e) => !originals.has(e.name ?? '')).length,
      ...probed,
      flowControl: flow,
      /** This process (the Lambda stand-ins) and the plane it started, from its start to the rotation's end. */
      memory: { machineMiB: Math.round(os.totalmem() / 2 ** 20), ...memory() },
      cpuSeconds: { cores: os.cpus().length, rotationSeconds: round((endedMs - startedMs) / 1000), ...cpuSeconds },
    };
    say(
      `${result.rotated} of ${o.nodes} nodes rotated in ${result.rotationSeconds} s (${result.nodesPerHour} an hour): ${result.requestsPerNode} requests and ${result.awsCallsPerNode} AWS calls per node, release p99 ${result.releaseSeconds.p99} s, ${result.podsEvictedTwice} pods evicted twice, ${result.invocationsFailed} invocations failed, probe p99 ${probed.probe.p99BeforeMs} -> ${probed.probe.p99DuringMs} ms, peak seats ${flow['peakExecutingSeats']} of ${flow['nominalLimitSeats']}`,
    );
    return result;
  } finally {
    await env.stop();
  }
}

/** The refresh as the `upgrade` command starts it (strategy default), played once the local Auto Scaling answers. */
async function startRefresh(
  env: Environment,
  o: RotationOptions,
  old: Parameters<typeof playRefresh>[2]['old'],
  play: Pick<Parameters<typeof playRefresh>[2], 'idle' | 'say' | 'afterStep'>,
) {
  let refresh: LocalRefresh | undefined;
  env.aws.onStartInstanceRefresh((r) => (refresh = r));
  env.aws.templateVersions.set('2', 'ami-0fedcba9876543210');
  const input = startRefreshInput({
    group: groupName,
    strategy: 'default',
    maxUnavailablePercentage: o.batchPercent,
    desiredCapacity: o.nodes,
    launchTemplateVersion: '2',
    launchTemplate: { id: localLaunchTemplate.id },
    autoRollback: false,
    alarms: [],
  });
  await new AutoScalingClient({ region: testAws.region }).send(new StartInstanceRefreshCommand(input));
  if (refresh === undefined) throw new Error('the local Auto Scaling did not start the instance refresh');
  return playRefresh(env, refresh, { old, firstNewIndex: o.nodes, ...play });
}
