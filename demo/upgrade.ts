// npm run demo -- --upgrade [--nodes 4] [--replicas 6] [--strategy default|minimal] [--max-unavailable 1]
// A node group upgrade on the local plane: a group of kwok nodes on launch template version 1
// with workloads under a budget, upgraded to version 2 by the real `upgrade` command (preflight,
// instance refresh, progress) against the local Auto Scaling endpoint, whose instance refresh
// is played by demo/instance-refresh.ts (a stand-in for AWS), with the real handler admitting
// each new node, marking the outdated ones and draining each old one.
import { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { parseArgs } from 'node:util';
import { kubeconfigGateway } from '../scripts/cluster-access.js';
import { runUpgrade } from '../scripts/upgrade.js';
import { renderPlan } from '../scripts/upgrade-plan.js';
import {
  byDrainer,
  createDaemonSet,
  createDeployment,
  createPdb,
  ensureNamespace,
  newInstanceId,
  readAudit,
  waitDeploymentReady,
  waitNodeReady,
} from '../test/cluster/kube.js';
import { testAws } from '../test/cluster/plane/token-webhook.js';
import { groupName, integerOption, startEnvironment } from './environment.js';
import { playInstanceRefreshes } from './instance-refresh.js';

const { values } = parseArgs({
  options: {
    upgrade: { type: 'boolean', default: true },
    nodes: { type: 'string', default: '4' },
    replicas: { type: 'string', default: '6' },
    strategy: { type: 'string', default: 'default' },
    'max-unavailable': { type: 'string', default: '1' },
    'lb-delay': { type: 'string', default: '2' },
  },
});
const nodeCount = integerOption('nodes', values.nodes, 2);
const replicas = integerOption('replicas', values.replicas, 2);
const maxUnavailable = integerOption('max-unavailable', values['max-unavailable'], 1);
const strategy = values.strategy === 'minimal' ? 'minimal' : 'default';

const t0 = Date.now();
const say = (line: string) => console.log(`[demo ${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s] ${line}`);
const env = await startEnvironment({
  log: say,
  loadBalancerDelaySeconds: integerOption('lb-delay', values['lb-delay'], 0),
});
let exitCode = 1;
try {
  const a = env.admin;
  say(`node group ${groupName}: ${nodeCount} kwok nodes on launch template version 1`);
  const nodes = Array.from({ length: nodeCount }, (_, i) => ({
    name: `${groupName}-v1-${i + 1}`,
    instanceId: newInstanceId(),
  }));
  for (const n of nodes) await env.addNode(n.name, n.instanceId, { 'node-version': '1' });
  for (const n of nodes) await waitNodeReady(a, n.name);
  await ensureNamespace(a, 'shop');
  await createDeployment(a, 'shop', 'nginx', replicas, { deleteDelay: '2s' });
  await createDeployment(a, 'kube-system', 'coredns', 2, {
    priorityClassName: 'system-cluster-critical',
    deleteDelay: '1s',
  });
  await createDaemonSet(a, 'kube-system', 'kube-proxy');
  await waitDeploymentReady(a, 'shop', 'nginx', replicas);
  await waitDeploymentReady(a, 'kube-system', 'coredns', 2);
  await createPdb(a, 'shop', 'nginx', 'nginx', replicas - 1);
  const originals = new Set(
    (await a.core.listPodForAllNamespaces()).items
      .filter((p) => p.metadata?.ownerReferences?.[0]?.kind === 'ReplicaSet')
      .map((p) => p.metadata!.name!),
  );
  say(`workloads: shop/nginx x${replicas} under a budget minAvailable ${replicas - 1}, coredns x2, kube-proxy`);

  // The handler's own account of the refresh, as its log lines come.
  env.onHandlerLog((log) => {
    const message = String(log['message']);
    if (/instance refresh (started|ended)|launch admitted|node drained|marked the nodes of the group/.test(message)) {
      const extra = ['marked', 'nodes', 'node', 'outcome', 'strategy', 'desired']
        .filter((k) => log[k] !== undefined)
        .map((k) => `${k}=${JSON.stringify(log[k])}`);
      say(`handler: ${message}${extra.length ? `  ${extra.join(' ')}` : ''}`);
    }
  });
  const player = playInstanceRefreshes(env, { say });
  const started = Date.now();
  const result = await runUpgrade(
    {
      group: groupName,
      strategy,
      maxUnavailable,
      launchTemplateVersion: '2',
      force: false,
      autoRollback: false,
      approve: true,
      deployment: 'graceful-node-termination-demo',
      region: testAws.region,
    },
    {
      autoScaling: new AutoScalingClient({ region: testAws.region }),
      core: a.core,
      policy: a.policy,
      nodesOf: async (ids) => ids.map((id) => env.aws.instances.get(id)!.privateDnsName),
      unmarkOutdated: (g, id) => kubeconfigGateway(a.kc).unmarkOutdated(g, { refreshId: id }),
      out: (line) =>
        console.log(
          line
            .split('\n')
            .map((l) => `  upgrade | ${l}`)
            .join('\n'),
        ),
      showPlan: (plan) => renderPlan(plan).forEach((line) => console.log(`  upgrade | ${line}`)),
      tty: false,
      pollMs: 1_000,
    },
  );
  if (result.refreshId) await player.done.get(result.refreshId);
  const evictions = readAudit(
    env.plane,
    (e) => byDrainer(e) && e.subresource === 'eviction' && e.code === 201 && e.receivedMs >= started,
  );
  const again = evictions.filter((e) => !originals.has(e.name ?? ''));
  const left = (await a.core.listNode()).items.map(
    (n) => `${n.metadata?.name} (v${n.metadata?.labels?.['node-version']})`,
  );
  say(
    `summary: refresh ${result.status}; ${evictions.length} evictions for the group's pods, ${again.length} of pods already moved once; nodes now: ${left.join(', ')}`,
  );
  exitCode = result.exitCode;
} finally {
  await env.stop();
  say('control plane stopped');
}
process.exit(exitCode);
