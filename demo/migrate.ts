// npm run demo -- --migrate [--nodes 3] [--replicas 6] [--max-unavailable 1] [--cordon-all]
// Moving a node group to a new one on the local plane, told as a timeline: an old group of kwok
// nodes running workloads under a budget and a batch Job, a new group of the same size, both
// served by the real handler; the real `migrate` flow (scripts/migrate.ts) against the local
// Auto Scaling endpoint, whose scale-in is played by demo/scale-in.ts: each old instance goes
// through its terminate hook, drained by the real handler.
import { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { kubeconfigGateway } from '../scripts/cluster-access.js';
import { runMigrate } from '../scripts/migrate.js';
import { renderMigratePlan } from '../scripts/migrate-plan.js';
import {
  byDrainer,
  createDaemonSet,
  createDeployment,
  createPdb,
  ensureNamespace,
  newInstanceId,
  readAudit,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from '../test/cluster/kube.js';
import { testAws } from '../test/cluster/plane/token-webhook.js';
import { integerOption, startEnvironment } from './environment.js';
import { playScaleIns } from './scale-in.js';

const { values } = parseArgs({
  options: {
    migrate: { type: 'boolean', default: true },
    nodes: { type: 'string', default: '3' },
    replicas: { type: 'string', default: '6' },
    'max-unavailable': { type: 'string', default: '1' },
    'cordon-all': { type: 'boolean', default: false },
    'lb-delay': { type: 'string', default: '2' },
    out: { type: 'string', default: join(dirname(fileURLToPath(import.meta.url)), 'out', 'migrate-timeline.json') },
  },
});
const nodeCount = integerOption('nodes', values.nodes, 1);
const replicas = integerOption('replicas', values.replicas, 2);
const maxUnavailable = integerOption('max-unavailable', values['max-unavailable'], 1);
const [from, to] = ['workers-old', 'workers-new'];

const t0 = Date.now();
const timeline: { atSeconds: number; source: string; what: string }[] = [];
const say = (line: string, source = 'demo') => {
  const atSeconds = Number(((Date.now() - t0) / 1000).toFixed(1));
  timeline.push({ atSeconds, source, what: line });
  console.log(`[demo ${atSeconds.toFixed(1).padStart(5)}s] ${source === 'demo' ? '' : `${source} | `}${line}`);
};
const env = await startEnvironment({
  log: (line) => say(line),
  loadBalancerDelaySeconds: integerOption('lb-delay', values['lb-delay'], 0),
  groups: [from, to],
});
let exitCode = 1;
try {
  const a = env.admin;
  const old = Array.from({ length: nodeCount }, (_, i) => `${from}-${i + 1}`);
  for (const name of old) await env.addNode(name, newInstanceId(), {}, [], from);
  for (const name of old) await waitNodeReady(a, name);
  await ensureNamespace(a, 'shop');
  await ensureNamespace(a, 'batch');
  await createDeployment(a, 'shop', 'nginx', replicas, { deleteDelay: '2s' });
  await createDeployment(a, 'kube-system', 'coredns', 2, {
    priorityClassName: 'system-cluster-critical',
    deleteDelay: '1s',
  });
  await createDaemonSet(a, 'kube-system', 'kube-proxy');
  await waitDeploymentReady(a, 'shop', 'nginx', replicas);
  await waitDeploymentReady(a, 'kube-system', 'coredns', 2);
  await createPdb(a, 'shop', 'nginx', 'nginx', replicas - 1);
  await a.batch.createNamespacedJob({
    namespace: 'batch',
    body: {
      metadata: { name: 'nightly-report' },
      spec: {
        template: {
          metadata: {
            annotations: {
              'pod-complete.stage.kwok.x-k8s.io/delay': '20s',
              'pod-complete.stage.kwok.x-k8s.io/jitter-delay': '20s',
            },
          },
          spec: {
            restartPolicy: 'Never',
            nodeSelector: { 'eks.amazonaws.com/nodegroup': from },
            containers: [{ name: 'report', image: 'registry.k8s.io/pause:3.10' }],
            automountServiceAccountToken: false,
          },
        },
      },
    },
  });
  await until('the batch Job Running', 30_000, async () =>
    (await a.core.listNamespacedPod({ namespace: 'batch' })).items.some((p) => p.status?.phase === 'Running'),
  );
  const originals = new Set((await a.core.listPodForAllNamespaces()).items.map((p) => p.metadata!.name!));
  say(
    `old group ${from}: ${nodeCount} nodes running shop/nginx x${replicas} (budget minAvailable ${replicas - 1}), coredns x2, kube-proxy, a 20 s batch Job`,
  );
  for (let i = 1; i <= nodeCount; i++) await env.addNode(`${to}-${i}`, newInstanceId(), {}, [], to);
  say(`new group ${to}: ${nodeCount} nodes joining`);

  env.onHandlerLog((log) => {
    const message = String(log['message']);
    if (
      /drain (started|finished)|node drained|lifecycle action completed|took back the marks of a migration|waiting for batch/i.test(
        message,
      )
    ) {
      say(`${message}${log['node'] ? ` node=${String(log['node'])}` : ''}`, 'handler');
    }
  });
  playScaleIns(env, { say: (line) => say(line, 'autoscaling') });
  const started = Date.now();
  const gateway = kubeconfigGateway(a.kc);
  const result = await runMigrate(
    {
      from,
      to,
      maxUnavailable,
      cordonAll: values['cordon-all'],
      leaseSeconds: 300,
      readyTimeoutSeconds: 120,
      batchTimeoutSeconds: 300,
      approve: true,
      region: testAws.region,
    },
    {
      autoScaling: new AutoScalingClient({ region: testAws.region }),
      cluster: gateway,
      core: a.core,
      nodesOf: async (ids) =>
        new Map(
          ids.flatMap((id) =>
            env.aws.instances.has(id) ? [[id, env.aws.instances.get(id)!.privateDnsName] as const] : [],
          ),
        ),
      out: (line) => line.split('\n').forEach((l) => say(l, 'migrate')),
      showPlan: (plan) => renderMigratePlan(plan).forEach((line) => say(line, 'migrate')),
      pollMs: 1_000,
    },
  );
  await gateway.flush?.(5_000);
  const evictions = readAudit(
    env.plane,
    (e) => byDrainer(e) && e.subresource === 'eviction' && e.code === 201 && e.receivedMs >= started,
  ).map((e) => e.name ?? '');
  const job = await a.batch.readNamespacedJob({ namespace: 'batch', name: 'nightly-report' });
  say(
    `summary: ${result.status} in ${((Date.now() - started) / 1000).toFixed(0)} s; ${evictions.length} evictions, ${evictions.filter((n) => !originals.has(n)).length} of pods already moved once, ` +
      `${evictions.length - new Set(evictions).size} evicted twice; batch Job succeeded ${job.status?.succeeded ?? 0} (never evicted: ${!evictions.some((n) => n.startsWith('nightly-report'))}); ` +
      `nodes now: ${(await a.core.listNode()).items.map((n) => n.metadata!.name).join(', ')}`,
  );
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, JSON.stringify(timeline, null, 2));
  exitCode = result.exitCode;
} finally {
  await env.stop();
  say('control plane stopped');
}
process.exit(exitCode);
