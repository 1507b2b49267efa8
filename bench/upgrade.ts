// The upgrade section of `npm run bench` (issue 14): a 6-node group running 24 Deployment
// replicas under budgets (spread over the nodes, two may go at a time), upgraded by the real `upgrade` command through the local instance
// refresh (demo/instance-refresh.ts), with the outdated nodes marked at the start and, the
// same refresh, without (MARK_OUTDATED_ON_REFRESH=false); both strategies. Evictions come
// from the API server's audit log: per original pod, 1.0 means every pod moved once.
import { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { kubeconfigGateway } from '../scripts/cluster-access.js';
import { runUpgrade } from '../scripts/upgrade.js';
import { groupName, startEnvironment } from '../demo/environment.js';
import { playInstanceRefreshes } from '../demo/instance-refresh.js';
import {
  byDrainer,
  createDeployment,
  createPdb,
  ensureNamespace,
  newInstanceId,
  readAudit,
  until,
  waitNodeReady,
} from '../test/cluster/kube.js';
import { testAws } from '../test/cluster/plane/token-webhook.js';

export interface UpgradeRun {
  readonly strategy: 'default' | 'minimal';
  readonly marking: boolean;
  readonly nodes: number;
  readonly originalPods: number;
  readonly evictions: number;
  readonly evictionsPerPod: number;
  /** Evictions of pods that had already been moved once by this refresh. */
  readonly podsMovedTwiceOrMore: number;
  readonly seconds: number;
  readonly status: string;
}

const apps = ['api', 'web', 'worker', 'cache'];
const replicas = 6;
const nodeCount = 6;

async function once(
  strategy: 'default' | 'minimal',
  marking: boolean,
  say: (line: string) => void,
): Promise<UpgradeRun> {
  const env = await startEnvironment({ log: () => {}, loadBalancerDelaySeconds: 0 });
  try {
    const a = env.admin;
    for (let i = 1; i <= nodeCount; i++)
      await env.addNode(`${groupName}-v1-${i}`, newInstanceId(), { 'node-version': '1' });
    for (let i = 1; i <= nodeCount; i++) await waitNodeReady(a, `${groupName}-v1-${i}`);
    await ensureNamespace(a, 'apps');
    for (const app of apps) {
      // Spread over the nodes, as HA apps are, and budgets that let two go at a time: with the
      // minimal strategy every old node is cordoned and a node running more pods of a budget
      // than it allows at once could not drain until its deadline (the preflight refuses that:
      // budget-deadlock-terminate-first).
      await createDeployment(a, 'apps', app, replicas, { deleteDelay: '1s', spreadOverNodes: true });
      await createPdb(a, 'apps', app, app, replicas - 2);
    }
    const running = async () =>
      (await a.core.listNamespacedPod({ namespace: 'apps' })).items.filter(
        (p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp,
      );
    await until(
      `${apps.length * replicas} replicas Running`,
      120_000,
      async () => (await running()).length === apps.length * replicas,
      500,
    );
    await until(
      'budgets computed',
      60_000,
      async () => {
        const budgets = (await a.policy.listNamespacedPodDisruptionBudget({ namespace: 'apps' })).items;
        return (
          budgets.length === apps.length &&
          budgets.every((b) => b.status?.currentHealthy === replicas && b.status?.disruptionsAllowed === 2)
        );
      },
      500,
    );
    const originals = new Set((await running()).map((p) => p.metadata!.name!));
    playInstanceRefreshes(env, { say: () => {}, settings: { MARK_OUTDATED_ON_REFRESH: String(marking) } });
    const started = Date.now();
    const result = await runUpgrade(
      {
        group: groupName,
        strategy,
        maxUnavailable: 1,
        launchTemplateVersion: '2',
        force: true,
        autoRollback: false,
        approve: true,
      },
      {
        autoScaling: new AutoScalingClient({ region: testAws.region }),
        core: a.core,
        policy: a.policy,
        nodesOf: async (ids) => ids.map((id) => env.aws.instances.get(id)!.privateDnsName),
        unmarkOutdated: (g, id) => kubeconfigGateway(a.kc).unmarkOutdated(g, { refreshId: id }),
        out: () => {},
        showPlan: () => {},
        tty: false,
        pollMs: 500,
      },
    );
    const seconds = (Date.now() - started) / 1000;
    const evictions = readAudit(
      env.plane,
      (e) =>
        byDrainer(e) &&
        e.subresource === 'eviction' &&
        e.code === 201 &&
        e.namespace === 'apps' &&
        e.receivedMs >= started - 50,
    );
    const run: UpgradeRun = {
      strategy,
      marking,
      nodes: nodeCount,
      originalPods: originals.size,
      evictions: evictions.length,
      evictionsPerPod: Math.round((evictions.length / originals.size) * 1000) / 1000,
      podsMovedTwiceOrMore: evictions.filter((e) => !originals.has(e.name ?? '')).length,
      seconds: Math.round(seconds * 10) / 10,
      status: result.status ?? `exit ${result.exitCode}`,
    };
    say(
      `upgrade: strategy ${strategy}, marking ${marking ? 'on' : 'off'}: ${run.evictions} evictions for ${run.originalPods} pods (${run.evictionsPerPod} per pod), ${run.seconds} s, ${run.status}`,
    );
    return run;
  } finally {
    await env.stop();
  }
}

export async function runUpgradeBench(say: (line: string) => void): Promise<Record<string, unknown>> {
  say(
    `upgrade: ${nodeCount} nodes, ${apps.length} Deployments x ${replicas} replicas spread over them, budgets minAvailable ${replicas - 2}, one instance at a time, each run on a fresh plane`,
  );
  const marked = await once('default', true, say);
  const naive = await once('default', false, say);
  const minimalMarked = await once('minimal', true, say);
  const minimalNaive = await once('minimal', false, say);
  return {
    evictionsPerPod: marked.evictionsPerPod,
    naiveEvictionsPerPod: naive.evictionsPerPod,
    seconds: marked.seconds,
    naiveSeconds: naive.seconds,
    minimal: {
      evictionsPerPod: minimalMarked.evictionsPerPod,
      naiveEvictionsPerPod: minimalNaive.evictionsPerPod,
      seconds: minimalMarked.seconds,
      naiveSeconds: minimalNaive.seconds,
    },
    runs: [marked, naive, minimalMarked, minimalNaive],
  };
}
