// The reconciler's share of the fleet section: what one pass costs (EventBridge's scheduled
// event, run by the deployed bundle in a fresh process, as one invocation of the schedule)
// with nothing marked, on 3 nodes and on 2,000, and with 10 stale drain marks on the 2,000
// (nodes marked as a drain marks them, whose instances Auto Scaling reports InService: the
// lifecycle action is long over, and the event that should have taken the marks back was
// lost). Requests from the audit log, bytes from the counting proxy, AWS calls from the local
// endpoint.
import { randomUUID } from 'node:crypto';
import { terminateHook, groupName, type Environment } from '../demo/environment.js';
import { formatDrainRecord } from '../lambda/cluster/marks/drain-record.js';
import { drainAnnotation, excludeFromLoadBalancersLabel, ownerLabel } from '../lambda/cluster/marks/mark-keys.js';
import { type DrainRecord } from '../lambda/cluster/model.js';
import { byDrainer, readAudit, sleep, until, type AuditEntry } from '../test/cluster/kube.js';
import { testAws } from '../test/cluster/plane/token-webhook.js';
import { scheduledEvent as scheduledEventAt } from '../test/fixtures/deliveries.js';
import { measureDrainMemory } from './memory.js';
import { bytesByKind } from './wire.js';
import { lifecycleAction } from '../test/fixtures/drain-sources.js';

export interface ReconcilePass {
  readonly nodes: number;
  /** Nodes carrying our owner label when the pass ran (its own report). */
  readonly markedNodes: number;
  /** Requests the pass made to the API server (audit log). */
  readonly requests: number;
  readonly requestsByKind: Readonly<Record<string, number>>;
  /** Bytes of the answers, as on the wire (proxy). */
  readonly responseBytes: number;
  readonly bytesBy: Readonly<Record<string, number>>;
  /** Calls to the local AWS endpoint, DescribeCluster (the fresh process connecting) included. */
  readonly awsCalls: number;
  readonly awsCallsByAction: Readonly<Record<string, number>>;
  /** Nodes whose drain marks the pass took back (its own report). */
  readonly drainMarksRemoved: number;
  /** The pass as the handler timed it (its `reconcile pass` log line). */
  readonly passMs: number | undefined;
  readonly maxRssMiB: number;
  /** With REPAIR: the handler's `repair pass` line (what it judged and did, its own timing). */
  readonly repair?: Record<string, unknown> | undefined;
}

export interface StaleMarksPass extends ReconcilePass {
  /** Nodes marked before the pass (their instances InService). */
  readonly staleMarks: number;
  /** `DrainMarksRemoved` Events the pass wrote. */
  readonly drainMarksRemovedEvents: number;
  /** Of the marked nodes, those without any of the marks after the pass (checked by the bench). */
  readonly unmarkedAfter: number;
}

export interface ReconcileProbe {
  readonly env: Environment;
  /** The deployed bundle (index.mjs). */
  readonly bundlePath: string;
  /** Nodes in the cluster now. */
  nodes(): Promise<number>;
}

/** This deployment's name as the handler reads it (DEPLOYMENT_NAME, default graceful-node-termination). */
const ownerOf = (env: Environment) => env.handlerEnvironment['DEPLOYMENT_NAME'] ?? 'graceful-node-termination';

/** EventBridge's scheduled event, as the construct's reconcile rule sends it, now. */
export const scheduledEvent = (): Record<string, unknown> =>
  scheduledEventAt(new Date().toISOString(), { account: testAws.accountId, region: testAws.region, id: randomUUID() });

/** One pass by the bundle in a fresh process, and what it cost; `variables` over the function's (REPAIR, say). */
export async function reconcilePass(
  p: ReconcileProbe,
  variables: Readonly<Record<string, string>> = {},
): Promise<ReconcilePass> {
  const { env } = p;
  const nodes = await p.nodes();
  await sleep(300);
  const answersBefore = env.proxy!.counts.answers.length;
  const callsBefore = env.aws.calls.length;
  const started = Date.now();
  // Without the loaders tsx puts in NODE_OPTIONS for this process: the Lambda runtime has none.
  const { NODE_OPTIONS: _loaders, ...bundleEnvironment } = env.handlerEnvironment;
  const run = await measureDrainMemory(p.bundlePath, { ...bundleEnvironment, ...variables }, scheduledEvent());
  const status = (run.result as { records?: { status?: string }[] }).records?.[0]?.status;
  if (status !== 'reconciled')
    throw new Error(`reconcile: the bundle did not run a pass: ${JSON.stringify(run.result)}`);
  // The audit log is written as each answer completes: let the last lines reach the file.
  await sleep(500);
  const requests = readAudit(env.plane, (e) => byDrainer(e) && e.receivedMs >= started - 50);
  const answers = env.proxy!.counts.answers.slice(answersBefore);
  const calls = env.aws.calls.slice(callsBefore);
  const report = run.logs.find((l) => l['message'] === 'reconcile pass') ?? {};
  const list = (key: string) => (Array.isArray(report[key]) ? (report[key] as unknown[]).length : 0);
  return {
    nodes,
    markedNodes: typeof report['markedNodes'] === 'number' ? report['markedNodes'] : -1,
    requests: requests.length,
    requestsByKind: countBy(requests.map(kindOf)),
    responseBytes: answers.reduce((n, a) => n + a.bytes, 0),
    bytesBy: bytesByKind(answers),
    awsCalls: calls.length,
    awsCallsByAction: countBy(calls.map((c) => c.action)),
    drainMarksRemoved: list('drainMarksRemoved'),
    passMs: typeof report['durationMs'] === 'number' ? report['durationMs'] : undefined,
    maxRssMiB: run.maxRssMiB,
    repair: run.logs.find((l) => l['message'] === 'repair pass'),
  };
}

/**
 * The nodes the sections before drained leave as their instances terminate: Auto Scaling
 * forgets the instance and the Node goes. After this nothing in the cluster carries our marks.
 */
export async function removeDrainedNodes(env: Environment): Promise<string[]> {
  const selector = `${ownerLabel}=${ownerOf(env)}`;
  const marked = (await env.admin.core.listNode({ labelSelector: selector })).items;
  for (const node of marked) {
    env.aws.instances.delete(node.spec?.providerID?.split('/').pop() ?? '');
    await env.admin.core.deleteNode({ name: node.metadata!.name! });
  }
  await until(
    'no node carries our marks',
    60_000,
    async () => (await env.admin.core.listNode({ labelSelector: selector })).items.length === 0,
  );
  return marked.map((n) => n.metadata!.name!);
}

/**
 * Marks `names` as a drain of ours marks a node (owner label, load-balancer label, cordon, drain
 * record an hour old), with their instances InService in the group; runs one pass; checks that
 * every mark is gone.
 */
export async function staleMarksPass(p: ReconcileProbe, names: readonly string[]): Promise<StaleMarksPass> {
  const { env } = p;
  const hourAgo = Date.now() - 3_600_000;
  for (const name of names) {
    const node = await env.admin.core.readNode({ name });
    const instanceId = node.spec?.providerID?.split('/').pop() ?? '';
    env.aws.instances.set(instanceId, { privateDnsName: name, group: groupName, lifecycleState: 'InService' });
    const record: DrainRecord = {
      source: lifecycleAction(randomUUID(), terminateHook),
      notifiedAtMs: hourAgo,
      startedAtMs: hourAgo + 1_000,
      updatedAtMs: hourAgo + 60_000,
      set: ['exclude-from-load-balancers', 'cordon'],
    };
    const patch = {
      metadata: {
        labels: { [ownerLabel]: ownerOf(env), [excludeFromLoadBalancersLabel]: 'true' },
        annotations: { [drainAnnotation]: formatDrainRecord(record) },
      },
      spec: { unschedulable: true },
    };
    env.admin.kubectl('patch', 'node', name, '--type=merge', '-p', JSON.stringify(patch));
  }
  const started = Date.now();
  const pass = await reconcilePass(p);
  const events = readAudit(
    env.plane,
    (e) => byDrainer(e) && e.receivedMs >= started - 50 && e.resource === 'events' && e.verb === 'create',
  ).filter((e) => (e.requestObject as { reason?: string } | undefined)?.reason === 'DrainMarksRemoved');
  let unmarkedAfter = 0;
  for (const name of names) {
    const node = await env.admin.core.readNode({ name });
    const labels = node.metadata?.labels ?? {};
    const clean =
      labels[ownerLabel] === undefined &&
      labels[excludeFromLoadBalancersLabel] === undefined &&
      node.metadata?.annotations?.[drainAnnotation] === undefined &&
      node.spec?.unschedulable !== true;
    if (clean) unmarkedAfter++;
  }
  if (unmarkedAfter !== names.length)
    throw new Error(`reconcile: ${unmarkedAfter} of ${names.length} stale-marked nodes were unmarked by the pass`);
  return { ...pass, staleMarks: names.length, drainMarksRemovedEvents: events.length, unmarkedAfter };
}

function kindOf(e: AuditEntry): string {
  return `${e.verb} ${e.resource}${e.subresource ? `/${e.subresource}` : ''}`;
}

function countBy(keys: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}
