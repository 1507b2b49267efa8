// npm run demo -- --repair [--nodes 5] [--replicas 4]
// Node auto repair on the local plane: kwok nodes of a self-managed group whose status
// conditions are set as the EKS node monitoring agent sets them (lastTransitionTime backdated:
// the demo does not wait 30 minutes), the real handler on the reconciler's scheduled event,
// and a local Auto Scaling endpoint that plays the replacement of an instance marked Unhealthy
// (terminate notification to our hook, which drains the node; a new instance launches).
import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import {
  byDrainer,
  createDeployment,
  createPdb,
  ensureNamespace,
  eventsFor,
  newInstanceId,
  readAudit,
  waitDeploymentReady,
  waitNodeReady,
} from '../test/cluster/kube.js';
import { testAws } from '../test/cluster/plane/token-webhook.js';
import { scheduledEvent } from '../test/fixtures/deliveries.js';
import { groupName, integerOption, startEnvironment } from './environment.js';
import { startTimeline } from './timeline.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    repair: { type: 'boolean', default: true },
    nodes: { type: 'string', default: '5' },
    replicas: { type: 'string', default: '4' },
    out: { type: 'string', default: join(root, 'demo', 'out', 'repair-timeline.json') },
  },
});
const nodeCount = integerOption('nodes', values.nodes, 4);
const replicas = integerOption('replicas', values.replicas, 2);
// The served group's nodes carry its label: each pass lists only them.
const settings = { REPAIR: JSON.stringify({ nodeSelector: `eks.amazonaws.com/nodegroup=${groupName}` }) };

const { timeline, say } = startTimeline();
const env = await startEnvironment({ log: (line) => say(line), loadBalancerDelaySeconds: 1 });
let exitCode = 1;
try {
  const a = env.admin;
  const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();
  const condition = (node: string, status: 'True' | 'False', since: string) => {
    const c = {
      type: 'NetworkingReady',
      status,
      reason: status === 'True' ? 'NetworkingIsReady' : 'IPAMDNotReady',
      message: '',
      lastHeartbeatTime: new Date().toISOString(),
      lastTransitionTime: since,
    };
    a.kubectl(
      'patch',
      'node',
      node,
      '--subresource=status',
      '--type=strategic',
      '-p',
      JSON.stringify({ status: { conditions: [c] } }),
    );
  };
  const nodes = new Map<string, string>();
  /** A node of the group; `viaHook`: a replacement Auto Scaling launches (the launch hook admits it). */
  const launch = async (name: string, viaHook = true) => {
    const id = newInstanceId();
    await env.addNode(name, id);
    await waitNodeReady(a, name);
    condition(name, 'True', minutesAgo(600));
    nodes.set(name, id);
    if (viaHook)
      say(
        `launched ${name} (${id}): ${String(((await env.launch(id, { settings })) as { records: { status: string }[] }).records[0]?.status)}`,
        'autoscaling',
      );
  };
  for (let i = 1; i <= nodeCount; i++) await launch(`demo-node-${i}`, false);
  await ensureNamespace(a, 'shop');
  await createDeployment(a, 'shop', 'nginx', replicas, { deleteDelay: '2s' });
  await waitDeploymentReady(a, 'shop', 'nginx', replicas);
  await createPdb(a, 'shop', 'nginx', 'nginx', replicas - 1);
  say(
    `node group ${groupName}: ${nodeCount} kwok nodes, NetworkingReady True; shop/nginx x${replicas} under a budget minAvailable ${replicas - 1}`,
  );

  env.onHandlerLog((log) => {
    const message = String(log['message']);
    if (/^node auto repair|^node drained|repair held/.test(message))
      say(
        `${message}${log['node'] ? `  node=${String(log['node'])}` : ''}${log['why'] ? `  ${String(log['why'])}` : ''}`,
        'handler',
      );
    if (message === 'repair pass') {
      const r = log as Record<string, unknown>;
      const list = (k: string) => ((r[k] as string[]).length ? `${k}=${(r[k] as string[]).join(',')}` : '');
      say(
        `repair pass: ${String(r['nodes'])} nodes listed, ${[`${String(r['unhealthy'])} unhealthy`, ...['replacing', 'deferred', 'held', 'changedMind'].map(list)].filter(Boolean).join(', ')}`,
        'handler',
      );
    }
    if (typeof log['RepairStorms'] === 'number' && (log['RepairStorms'] as number) > 0)
      say(`metric RepairStorms=${String(log['RepairStorms'])} (the RepairsHeld alarm watches it)`, 'handler');
  });
  env.aws.onCall((call) => {
    if (call.action === 'SetInstanceHealth')
      say(
        `SetInstanceHealth ${call.params['InstanceId']} ${call.params['HealthStatus']} (ShouldRespectGracePeriod=${call.params['ShouldRespectGracePeriod']})`,
        'autoscaling',
      );
  });
  const pass = async () => {
    say('EventBridge: scheduled event (the reconciler, every 5 min)', 'eventbridge');
    await env.deliver(
      scheduledEvent(new Date().toISOString(), {
        account: testAws.accountId,
        region: testAws.region,
        id: randomUUID(),
      }),
      { settings },
    );
  };
  const events = async (node: string) => {
    for (const e of (await eventsFor(a, 'Node', node)).filter((x) => x.reason.startsWith('Repair')))
      say(`${node} Event ${e.type} ${e.reason}: ${e.message}`, 'cluster');
  };
  /** What Auto Scaling does with an Unhealthy instance: terminate it (our hook drains it), then launch a replacement. */
  const replace = async (name: string, replacement: string) => {
    const id = nodes.get(name)!;
    say(`${id} is Unhealthy: terminating it; the terminate hook notifies the function`, 'autoscaling');
    const run = await env.terminate(id, { settings });
    say(
      `terminate hook: ${String((run.result as { records: { status: string }[] }).records[0]?.status)} after ${((Date.now() - run.notifiedMs) / 1000).toFixed(1)} s`,
      'autoscaling',
    );
    await a.core.deleteNode({ name });
    env.aws.instances.delete(id);
    nodes.delete(name);
    say(`${id} terminated, node ${name} gone`, 'ec2');
    await launch(replacement);
  };

  say(
    'the node monitoring agent reports NetworkingReady False (IPAMDNotReady): demo-node-2 since 35 min, demo-node-3 since 31 min, demo-node-4 since 10 min',
  );
  condition('demo-node-2', 'False', minutesAgo(35));
  condition('demo-node-3', 'False', minutesAgo(31));
  condition('demo-node-4', 'False', minutesAgo(10));
  const started = Date.now();
  await pass();
  for (const n of ['demo-node-2', 'demo-node-3']) await events(n);
  await replace('demo-node-2', `demo-node-${nodeCount + 1}`);
  say('demo-node-4 recovers before its 30 min: NetworkingReady True');
  condition('demo-node-4', 'True', new Date().toISOString());
  await pass();
  await replace('demo-node-3', `demo-node-${nodeCount + 2}`);
  await pass();

  await launch(`demo-node-${nodeCount + 3}`);
  say(
    `storm: demo-node-1 and demo-node-4 report NetworkingReady False since 40 min (2 of the group's ${nodes.size} nodes, more than 20 %)`,
  );
  condition('demo-node-1', 'False', minutesAgo(40));
  condition('demo-node-4', 'False', minutesAgo(40));
  await pass();
  await events('demo-node-1');

  const marked = env.aws.calls.filter((c) => c.action === 'SetInstanceHealth').map((c) => c.params['InstanceId']);
  const evictions = readAudit(
    env.plane,
    (e) => byDrainer(e) && e.subresource === 'eviction' && e.code === 201 && e.receivedMs >= started,
  ).length;
  const summary = { setInstanceHealth: marked, distinct: new Set(marked).size, evictions, nodesNow: [...nodes.keys()] };
  say(
    `summary: SetInstanceHealth ${marked.length} time(s) for ${summary.distinct} instance(s), ${evictions} evictions through the terminate hook; nodes now ${summary.nodesNow.join(', ')}`,
  );
  mkdirSync(dirname(values.out!), { recursive: true });
  writeFileSync(values.out!, JSON.stringify({ options: { nodes: nodeCount, replicas }, summary, timeline }, null, 2));
  say(`timeline written to ${values.out!.replace(`${root}/`, '')}`);
  exitCode = marked.length === 2 && summary.distinct === 2 ? 0 : 1;
} finally {
  await env.stop();
  say('control plane stopped');
}
process.exit(exitCode);
