// npm run demo: an Auto Scaling scale-in on a local cluster, told as a live timeline.
//   npm run demo -- --nodes 3 --replicas 6 --lb-delay 10 --invocation-seconds 900
//   npm run demo -- --observe (the deployment in MODE=observe: it says what it would do, changes nothing)
//   npm run demo -- --check-docs (and fail when the docs' quote of this output is stale: demo/transcript.ts)
//   npm run demo -- --upgrade (demo/upgrade.ts); npm run demo -- --migrate (demo/migrate.ts)
//   npm run demo -- --singleton (demo/singleton.ts: surge before evict)
// Starts the local control plane (etcd, kube-apiserver, controllers, kwok nodes), creates a
// small node group with realistic workloads, then sends the real handler the notification
// Auto Scaling sends when it terminates one instance. No AWS account: the Auto Scaling and
// EKS APIs are served locally through the SDK's standard endpoint settings.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import {
  createDaemonSet,
  createDeployment,
  createPdb,
  ensureNamespace,
  newInstanceId,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from '../test/cluster/kube.js';
import { startElbStub } from '../test/fakes/elb-stub.js';
import { testAws } from '../test/cluster/plane/token-webhook.js';
import { startEnvironment, groupName, integerOption } from './environment.js';
import { observeLine, unchangedNode, type NodeState } from './observe-lines.js';
import { playTargetGroup, playVolume, settleLine } from './settle-players.js';
import { checkQuote } from './transcript.js';

interface TimelineEntry {
  readonly atSeconds: number;
  readonly source: 'handler' | 'cluster' | 'autoscaling' | 'ec2' | 'sns' | 'elb';
  readonly what: string;
  readonly detail?: string;
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '3' },
    replicas: { type: 'string', default: '6' },
    // The fixed wait, only where the load balancers cannot be read (they can, locally).
    'lb-delay': { type: 'string', default: '10' },
    // How long the target group drains the instance once the controller deregistered it.
    'deregistration-seconds': { type: 'string', default: '20' },
    // Lambda's timeout. Shorter (say 8), the drain outlasts one invocation and hands on.
    'invocation-seconds': { type: 'string', default: '900' },
    out: { type: 'string', default: join(root, 'demo', 'out', 'timeline.json') },
    // A node group upgrade instead of a scale-in (demo/upgrade.ts reads its own options).
    upgrade: { type: 'boolean', default: false },
    // The custom termination policy choosing which node goes (demo/scale-in-choice.ts).
    'scale-in-choice': { type: 'boolean', default: false },
    // Node auto repair instead (demo/repair.ts reads its own options).
    repair: { type: 'boolean', default: false },
    strategy: { type: 'string' },
    'max-unavailable': { type: 'string' },
    // Moving to a new node group instead (demo/migrate.ts reads its own options).
    migrate: { type: 'boolean', default: false },
    'cordon-all': { type: 'boolean', default: false },
    // Surge before evict for a one-replica Deployment instead (demo/singleton.ts reads its own options).
    singleton: { type: 'boolean', default: false },
    'drain-timeout': { type: 'string' },
    // The deployment in observe mode (MODE=observe): it says what it would do and changes nothing.
    observe: { type: 'boolean', default: false },
    // Compare this run's output with the docs' quote of it (demo/transcript.ts), or rewrite the quote.
    'check-docs': { type: 'boolean', default: false },
    'write-docs': { type: 'boolean', default: false },
  },
});
if (values.upgrade) {
  await import('./upgrade.js');
}
if (values['scale-in-choice']) {
  await import('./scale-in-choice.js');
}
if (values.repair) {
  await import('./repair.js');
}
if (values.migrate) {
  await import('./migrate.js');
}
if (values.singleton) {
  await import('./singleton.js');
}
const nodeCount = integerOption('nodes', values.nodes, 2);
const replicas = integerOption('replicas', values.replicas, 2);
const lbDelaySeconds = integerOption('lb-delay', values['lb-delay'], 0);
const invocationSeconds = integerOption('invocation-seconds', values['invocation-seconds'], 5);
const deregistrationSeconds = integerOption('deregistration-seconds', values['deregistration-seconds'], 0);

/** coredns first, then the most nginx pods. */
const score = (pods: readonly V1Pod[]) =>
  pods.filter((p) => p.metadata?.name?.startsWith('coredns')).length * 100 +
  pods.filter((p) => p.metadata?.namespace === 'shop').length;

const t0 = Date.now();
// What the docs quote: every line from the node group on (demo/transcript.ts).
const transcript: string[] = [];
let recording = false;
const print = (line: string) => {
  console.log(line);
  if (recording) transcript.push(...line.split('\n'));
};
const say = (line: string) => print(`[demo ${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s] ${line}`);
/** The command as the docs name it: the options that shape the output, defaults left out. */
const command = `npm run demo${values.observe ? ' -- --observe' : ''}`;
const defaults = {
  nodes: '3',
  replicas: '6',
  'lb-delay': '10',
  'deregistration-seconds': '20',
  'invocation-seconds': '900',
};
const asQuoted = Object.entries(defaults).every(([k, v]) => values[k as keyof typeof defaults] === v);
if ((values['check-docs'] || values['write-docs']) && !asQuoted) {
  console.error(
    `--check-docs and --write-docs work on the output of \`${command}\` as the docs quote it: ` +
      `give no other option (${Object.keys(defaults).join(', ')} at their defaults)`,
  );
  process.exit(2);
}

const elb = await startElbStub();
const env = await startEnvironment({
  log: (line) => say(line),
  loadBalancerDelaySeconds: lbDelaySeconds,
  invocationSeconds,
  loadBalancersUrl: elb.url,
});
let exitCode = 1;
try {
  const a = env.admin;
  recording = true;
  say(`creating node group ${groupName}: ${nodeCount} kwok nodes`);
  const nodes = Array.from({ length: nodeCount }, (_, i) => ({
    name: `demo-node-${i + 1}`,
    instanceId: newInstanceId(),
  }));
  // EC2 (the local stand-in) knows each instance's private DNS name: the node's name.
  for (const n of nodes) await env.addNode(n.name, n.instanceId);
  for (const n of nodes) await waitNodeReady(a, n.name);

  say(
    `workloads: nginx x${replicas} with a PDB minAvailable ${replicas - 1}, coredns x2, aws-node and kube-proxy DaemonSets, a batch Job (15 s)`,
  );
  await ensureNamespace(a, 'shop');
  await ensureNamespace(a, 'batch');
  // Pods take 2 s to shut down, so the budget visibly holds evictions back.
  await createDeployment(a, 'shop', 'nginx', replicas, { deleteDelay: '2s' });
  await createDeployment(a, 'kube-system', 'coredns', 2, {
    priorityClassName: 'system-cluster-critical',
    deleteDelay: '1s',
  });
  await createDaemonSet(a, 'kube-system', 'aws-node');
  await createDaemonSet(a, 'kube-system', 'kube-proxy');
  await waitDeploymentReady(a, 'shop', 'nginx', replicas);
  await waitDeploymentReady(a, 'kube-system', 'coredns', 2);
  const podsOnNode = async (node: string) =>
    (await a.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` })).items;
  // Scale-in picks one instance; we pick the one that tells the most: it runs coredns.
  const withCoredns = await Promise.all(nodes.map(async (n) => ({ n, pods: await podsOnNode(n.name) })));
  withCoredns.sort((x, y) => score(y.pods) - score(x.pods));
  const target = withCoredns[0]!.n;
  await createPdb(a, 'shop', 'nginx', 'nginx', replicas - 1);
  // Detached 8 s after the database left (it takes 12 s to shut down): after the drain's end,
  // which the batch Job's 15 s decide, so the settle phase waits for it.
  await playVolume(a, { namespace: 'shop', node: target.name, detachSeconds: 8 });
  // Observe mode is for finding what would hold a drain up: a budget that allows the one-replica
  // database no disruption. (Not in the scale-in: its drain would wait on it until the deadline.)
  if (values.observe) await createPdb(a, 'shop', 'db', 'db', 1);
  const group = await playTargetGroup(a, elb, {
    clusterName: testAws.clusterName,
    node: target.name,
    instanceId: target.instanceId,
    drainSeconds: deregistrationSeconds,
    instances: nodes.map((n) => n.instanceId),
  });
  say(
    `a database with a persistent volume on ${target.name}; nginx behind the AWS Load Balancer Controller's ` +
      `target group ${group.name} (a TargetGroupBinding on Service shop/nginx's NodePort), every node registered; ` +
      `it drains ${target.name} ${deregistrationSeconds} s once deregistered`,
  );
  if (values.observe)
    say(
      'and a PodDisruptionBudget db, minAvailable 1, on the one-replica database: ' +
        'a drain would wait on it until its deadline',
    );
  // Last, so that its 15 s run from just before the notification, however long the setup took.
  await a.batch.createNamespacedJob({
    namespace: 'batch',
    body: {
      metadata: { name: 'nightly-report' },
      spec: {
        template: {
          // kwok reads the jitter as the latest end: both set, the job runs exactly 15 s.
          metadata: {
            annotations: {
              'pod-complete.stage.kwok.x-k8s.io/delay': '15s',
              'pod-complete.stage.kwok.x-k8s.io/jitter-delay': '15s',
            },
          },
          spec: {
            restartPolicy: 'Never',
            // Preferred, not pinned: once the node is cordoned, the Job's next pod goes elsewhere.
            affinity: {
              nodeAffinity: {
                preferredDuringSchedulingIgnoredDuringExecution: [
                  {
                    weight: 100,
                    preference: {
                      matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [target.name] }],
                    },
                  },
                ],
              },
            },
            containers: [{ name: 'report', image: 'registry.k8s.io/pause:3.10' }],
            automountServiceAccountToken: false,
          },
        },
      },
    },
  });
  await until('batch Job pod Running', 30_000, async () =>
    (await podsOnNode(target.name)).some((p) => p.metadata?.namespace === 'batch' && p.status?.phase === 'Running'),
  ).catch(async (e: unknown) => {
    console.log(a.kubectl('get', 'pods,jobs', '-n', 'batch', '-o', 'wide'), a.kubectl('get', 'events', '-n', 'batch'));
    throw e;
  });
  const before = await podsOnNode(target.name);
  const nodeBefore: NodeState = { node: await a.core.readNode({ name: target.name }), pods: before };
  say(
    `${target.name} (${target.instanceId}) runs ${before.length} pods: ${before.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).join(', ')}`,
  );

  // The timeline: handler logs, cluster changes, Auto Scaling calls, stamped from the notification.
  const timeline: TimelineEntry[] = [];
  let notifiedMs = Date.now();
  const add = (source: TimelineEntry['source'], what: string, detail?: string) => {
    const entry = { atSeconds: Math.round((Date.now() - notifiedMs) / 10) / 100, source, what, detail };
    timeline.push(entry);
    print(`  +${entry.atSeconds.toFixed(2).padStart(6)}s  ${source.padEnd(11)} ${what}${detail ? `  ${detail}` : ''}`);
  };
  const blockedSeen = new Set<string>();
  env.onHandlerLog((log) => {
    const message = String(log['message']);
    const pod = typeof log['pod'] === 'string' ? log['pod'] : undefined;
    switch (message) {
      case 'lifecycle action verified (heartbeat recorded)':
        return add(
          'handler',
          'verified',
          'Auto Scaling knows the action (heartbeat recorded): the cluster may be touched',
        );
      case 'drain started':
        return add(
          'handler',
          'drain started',
          `node ${String(log['node'] ?? target.name)}, ${String(log['secondsToDeadline'])} s to the deadline`,
        );
      case 'node labelled for exclusion from external load balancers and cordoned':
        return add(
          'handler',
          'marked',
          'one patch: node.kubernetes.io/exclude-from-external-load-balancers=true, spec.unschedulable=true',
        );
      case 'pod evicted':
        return add('handler', 'evicted', pod);
      case 'eviction blocked, will retry': {
        const key = `${pod}/${String(log['budget'])}`;
        if (blockedSeen.has(key)) return;
        blockedSeen.add(key);
        return add('handler', 'PDB wait', `${pod} held by budget ${String(log['budget'] ?? log['reason'])}; retrying`);
      }
      case 'waiting for batch pods to finish before evicting them':
        return add(
          'handler',
          'batch wait',
          `not evicting ${(log['pods'] as string[]).join(', ')}: letting it finish (up to ${String(log['batchWaitUntil'])})`,
        );
      case 'drain progress':
        return add(
          'handler',
          'progress',
          `${String(log['podsRemaining'])} pods left (${String(log['terminating'])} terminating)`,
        );
      case 'node drained':
        return add('handler', 'drained', `${String(log['podsEvicted'])} pods evicted in ${String(log['seconds'])} s`);
      case 'waiting for load balancers to deregister the node':
        return add('handler', 'LB wait', `${String(log['seconds'])} s for load balancers to deregister the node`);
      case 'handed the termination on to a fresh invocation':
        return add(
          'handler',
          'handed on',
          `hand-off ${String(log['handOff'])} (${String(log['phase'])}, ${String(log['podsLeft'])} pods left): this invocation's time is nearly up`,
        );
      case 'drain resumed':
        return add('handler', 'resumed', `invocation ${Number(log['handOff']) + 1} carries the drain on`);
      case 'lifecycle action completed':
        return add('handler', 'completed', 'CompleteLifecycleAction CONTINUE');
      default: {
        const settled = settleLine(log) ?? observeLine(log);
        if (settled) return add('handler', ...settled);
        if (log['level'] === 'WARN' || log['level'] === 'ERROR')
          return add('handler', String(log['level']).toLowerCase(), message);
      }
    }
  });
  elb.onCall = (call, answer) => {
    // A shared reading asks for the whole group (no Targets): the instance's own member says its state.
    const member = answer.split('</member>').find((m) => m.includes(`<Id>${target.instanceId}</Id>`));
    const state = member === undefined ? 'not registered' : /<State>([^<]+)<\/State>/.exec(member)?.[1];
    const whole = call.form['Targets.member.1.Id'] === undefined;
    const targets = answer.split('<Target>').length - 1;
    add(
      'elb',
      `${call.api} ${call.action}`,
      call.action === 'DescribeTargetHealth'
        ? `${whole ? `whole group (${targets} targets), ` : ''}instance ${target.instanceId}: ${state}`
        : undefined,
    );
  };
  env.aws.onCall((call) => {
    if (call.action === 'Publish') {
      return add('sns', 'hand-off delivered', 'the topic invokes a fresh handler');
    }
    if (call.action === 'DescribeCluster') return;
    // The local endpoint records the ids a describe call names as InstanceIds (comma-separated);
    // a lifecycle call names its one instance in InstanceId.
    const ec2 = ['DescribeInstances', 'DescribeLaunchTemplates', 'DescribeSpotInstanceRequests'].includes(call.action);
    const ids = (call.params['InstanceIds'] ?? call.params['InstanceId'] ?? '').split(',').filter((id) => id !== '');
    add(
      ec2 ? 'ec2' : 'autoscaling',
      `${call.action} ${call.params['LifecycleActionResult'] ?? ''}`.trim(),
      `${ids.length === 0 ? 'no instance named' : `${ids.length === 1 ? 'instance' : 'instances'} ${ids.join(', ')}`} (${call.outcome})`,
    );
  });

  // Replacements: pods that become Ready on other nodes after the notification; batch pods
  // that finish.
  const known = new Set((await a.core.listPodForAllNamespaces()).items.map((p) => p.metadata?.uid));
  const finished = new Set<string | undefined>();
  let watching = true;
  const replacements: string[] = [];
  const watcher = (async () => {
    while (watching) {
      const pods: V1Pod[] = (await a.core.listPodForAllNamespaces()).items;
      for (const p of pods) {
        if (p.status?.phase === 'Succeeded' && !finished.has(p.metadata?.uid)) {
          finished.add(p.metadata?.uid);
          add(
            'cluster',
            'batch pod finished',
            `${p.metadata?.namespace}/${p.metadata?.name} Succeeded on ${p.spec?.nodeName}`,
          );
        }
        const ready = p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        if (!known.has(p.metadata?.uid) && ready && p.spec?.nodeName !== target.name) {
          known.add(p.metadata?.uid);
          replacements.push(`${p.metadata?.namespace}/${p.metadata?.name}`);
          add('cluster', 'replacement Ready', `${p.metadata?.namespace}/${p.metadata?.name} on ${p.spec?.nodeName}`);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();

  say(
    `Auto Scaling scale-in: terminating ${target.instanceId}; the lifecycle hook notifies the handler` +
      (values.observe ? ', deployed in observe mode (MODE=observe): it says what it would do and changes nothing' : ''),
  );
  print('');
  notifiedMs = Date.now();
  add(
    'autoscaling',
    'notification',
    `EC2_INSTANCE_TERMINATING ${target.instanceId} (hook ${'graceful-node-termination-terminate'})`,
  );
  const { result, invocations } = await env.terminate(target.instanceId, {
    settings: values.observe ? { MODE: 'observe' } : {},
  });
  await new Promise((resolve) => setTimeout(resolve, 1500)); // let the last replacements show
  watching = false;
  await watcher;
  print('');

  const after = await podsOnNode(target.name);
  const completed = env.aws.calls.filter((c) => c.action === 'CompleteLifecycleAction' && c.outcome === 'ok');
  const summary = {
    node: target.name,
    instanceId: target.instanceId,
    secondsToCompletion: completed[0] ? Math.round((completed[0].atMs - notifiedMs) / 10) / 100 : undefined,
    podsEvicted: timeline.filter((e) => e.what === 'evicted').length,
    batchPodsFinished: finished.size,
    budgetWaits: blockedSeen.size,
    replacementsReady: replacements.length,
    // Finished pods stay as API objects until their owner cleans them up; they run nothing.
    podsLeftOnNode: after
      .filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed')
      .map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`),
    lifecycleResult: completed[0]?.params['LifecycleActionResult'],
    invocations,
    handlerResult: result,
  };
  const changed = values.observe
    ? unchangedNode(nodeBefore, { node: await a.core.readNode({ name: target.name }), pods: after })
    : [];
  const completion =
    `lifecycle action completed ${summary.lifecycleResult ?? 'NEVER'} ` +
    `${summary.secondsToCompletion ?? '?'} s after the notification`;
  const asItWas =
    changed.length === 0
      ? `${target.name} is as it was: still schedulable, not excluded from load balancers, ` +
        `its ${before.length} pods still running there`
      : `but ${changed.join('; ')}`;
  if (values.observe) say(`summary: ${completion}, without draining; ${asItWas}`);
  else
    say(
      `summary: ${plural(summary.podsEvicted, 'pod')} evicted, ` +
        `${plural(summary.batchPodsFinished, 'batch pod')} finished in place, ` +
        `${plural(summary.budgetWaits, 'budget wait')}, ` +
        `${plural(summary.replacementsReady, 'replacement')} Ready elsewhere, ` +
        `${completion} (${plural(summary.invocations, 'invocation')}); ` +
        `still running on the node: ${summary.podsLeftOnNode.join(', ') || 'nothing'}`,
    );
  const described = a.kubectl('describe', 'node', target.name);
  print(
    `\n$ kubectl describe node ${target.name}   (Events)\n${described.slice(described.indexOf('Events:')).trimEnd()}`,
  );
  if (values.observe) {
    // The Warning observe mode leaves on each pod a budget would hold up.
    const held = await a.core.listEventForAllNamespaces({ fieldSelector: 'reason=EvictionWouldBeBlocked' });
    print('\nEvents on pods (reason EvictionWouldBeBlocked):');
    for (const e of held.items)
      print(`  ${e.type} ${e.reason} pod/${e.involvedObject.namespace}/${e.involvedObject.name}: ${e.message}`);
    if (held.items.length === 0) print('  none');
  }
  mkdirSync(dirname(values.out!), { recursive: true });
  writeFileSync(
    values.out!,
    JSON.stringify(
      {
        options: {
          nodes: nodeCount,
          replicas,
          loadBalancerDelaySeconds: lbDelaySeconds,
          invocationSeconds,
          observe: values.observe,
        },
        summary,
        timeline,
      },
      null,
      2,
    ),
  );
  const transcriptFile = join(dirname(values.out!), `${values.observe ? 'observe' : 'scale-in'}.txt`);
  say(`timeline written to ${relative(root, values.out!)}, this output to ${relative(root, transcriptFile)}`);
  writeFileSync(transcriptFile, `${transcript.join('\n')}\n`);
  const ran = completed.length === 1 && summary.lifecycleResult === 'CONTINUE' && changed.length === 0;
  let quoteHolds = true;
  if (values['check-docs'] || values['write-docs']) {
    const quote = checkQuote(root, command, transcript.join('\n'), values['write-docs']);
    recording = false;
    for (const line of quote.report) say(line);
    quoteHolds = quote.ok;
  }
  exitCode = ran && quoteHolds ? 0 : 1;
} finally {
  await env.stop();
  await elb.close();
  say('control plane stopped');
}
process.exit(exitCode);

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
