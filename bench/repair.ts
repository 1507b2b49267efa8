// The repair section: what node auto repair adds to one reconcile pass, run by the deployed
// bundle in a fresh process with the V8 flags Lambda gives a 256 MB function, as one
// invocation of the schedule. All healthy at each size (20, 2,000 and 5,000 nodes of realistic
// size, each with the node monitoring agent's five conditions, all in the served group), this
// tree's bundle beside the previous tree's; then, at the largest size, two nodes bad past
// their rule (one replaced, one deferred by the parallel limit) and a storm (a quarter of the
// group bad: nothing repaired). Requests from the audit log, bytes from the counting proxy,
// AWS calls from the local endpoint, peak RSS from /proc (memory.ts).
import { groupName, startEnvironment, type Environment } from '../demo/environment.js';
import { readAudit, byDrainer } from '../test/cluster/kube.js';
import { fillerNode, fillersSettled } from './fleet.js';
import { reconcilePass, type ReconcilePass } from './reconcile.js';

export interface RepairBench {
  /** The node counts, smallest first; two bad and the storm run at the largest. */
  readonly sizes: readonly number[];
  readonly nodeJsonBytes: number;
  /** The function's memory setting, and the V8 flags Lambda's Node.js bootstrap gives it for that. */
  readonly lambdaMemoryMiB: number;
  readonly v8Flags: string;
  /** All healthy, at each size: this tree's bundle, and the previous tree's when given. */
  readonly healthy: readonly {
    readonly nodes: number;
    readonly current: ReconcilePass;
    readonly previous?: ReconcilePass;
  }[];
  readonly previousCommit?: string;
  readonly twoBad: ReconcilePass & { readonly setInstanceHealth: number; readonly repairEvents: number };
  readonly storm: ReconcilePass & { readonly bad: number; readonly setInstanceHealth: number };
}

const agentConditions = (since: Date) =>
  ['KernelReady', 'NetworkingReady', 'ContainerRuntimeReady', 'StorageReady', 'AcceleratedHardwareReady'].map(
    (type) => ({
      type,
      status: 'True',
      reason: `${type.replace('Ready', '')}IsReady`,
      message: 'Monitoring for the system is active',
      lastHeartbeatTime: since,
      lastTransitionTime: since,
    }),
  );

/**
 * The flags Lambda's Node.js bootstrap (/var/runtime/bootstrap in the nodejs images) starts
 * node with for a function of `memoryMiB`: a tenth for the young generation, the rest for the
 * old. Without them V8 sizes its heap for this machine (4 GiB here) and grows lazily.
 */
export const lambdaV8Flags = (memoryMiB: number): string => {
  const newSpace = Math.floor(memoryMiB / 10);
  return `--max-semi-space-size=${Math.floor(newSpace / 2)} --max-old-space-size=${memoryMiB - newSpace}`;
};

export async function runRepairBench(o: {
  say: (line: string) => void;
  bundlePath: string;
  /** The previous version's bundle (its tree's lambda/ bundled), run beside this one at each size. */
  previousBundlePath?: string | undefined;
  previousCommit?: string | undefined;
  sizes: readonly number[];
  lambdaMemoryMiB: number;
}): Promise<RepairBench> {
  const { say } = o;
  const env = await startEnvironment({
    log: say,
    loadBalancerDelaySeconds: 0,
    manyNodesWithoutKubelet: true,
    countBytes: true,
  });
  try {
    const names: string[] = [];
    const v8Flags = lambdaV8Flags(o.lambdaMemoryMiB);
    const pass = (bundlePath = o.bundlePath) =>
      reconcilePass({ env, bundlePath, nodes: async () => names.length }, { REPAIR: 'on', NODE_OPTIONS: v8Flags });
    const sizes = [...o.sizes].sort((x, y) => x - y);
    const healthy: RepairBench['healthy'][number][] = [];
    for (const size of sizes) {
      await createNodes(env, names, size, say);
      const current = await pass();
      const previous = o.previousBundlePath !== undefined ? await pass(o.previousBundlePath) : undefined;
      healthy.push({ nodes: names.length, current, ...(previous ? { previous } : {}) });
      say(
        `repair: ${names.length} nodes, all healthy: peak RSS ${current.maxRssMiB} MiB, ${current.requests} requests` +
          (previous ? `; previous version ${previous.maxRssMiB} MiB, ${previous.requests} requests` : ''),
      );
    }
    const nodeJsonBytes = Buffer.byteLength(JSON.stringify(await env.admin.core.readNode({ name: names[0]! })));
    const twoBad = await twoBadPass(env, names, pass, say);
    const storm = await stormPass(env, names, pass, say);
    return {
      sizes,
      nodeJsonBytes,
      lambdaMemoryMiB: o.lambdaMemoryMiB,
      v8Flags,
      healthy,
      ...(o.previousCommit !== undefined ? { previousCommit: o.previousCommit } : {}),
      twoBad,
      storm,
    };
  } finally {
    await env.stop();
  }
}

/** Stand-in nodes of realistic size, with the agent's conditions, in the served group, until there are `to`. */
async function createNodes(env: Environment, names: string[], to: number, say: (line: string) => void) {
  say(`repair: creating stand-in nodes ${names.length + 1} to ${to}, of realistic size, in group ${groupName}`);
  let next = names.length;
  const create = async () => {
    for (let i = next++; i < to; i = next++) {
      const body = fillerNode(i, ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'][i % 3]!);
      body.status!.conditions!.push(...agentConditions(new Date()));
      await env.admin.core.createNode({ body });
      const instanceId = body.spec!.providerID!.split('/').pop()!;
      env.aws.instances.set(instanceId, {
        privateDnsName: body.metadata!.name!,
        group: groupName,
        lifecycleState: 'InService',
      });
      names[i] = body.metadata!.name!;
      if ((i + 1) % 500 === 0) say(`repair: ${i + 1} of ${to} stand-in nodes`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, create));
  await fillersSettled(
    env.admin,
    (tainted) => say(`repair: ${tainted} stand-in nodes still carry the not-ready taint`),
    5_000,
  );
}

/** NetworkingReady False for `minutes` (bad past the default rule), or True again. */
function setNetworking(env: Environment, name: string, bad: { minutes: number } | 'healthy'): void {
  const since = new Date(Date.now() - (bad === 'healthy' ? 0 : bad.minutes) * 60_000).toISOString();
  const c = {
    type: 'NetworkingReady',
    status: bad === 'healthy' ? 'True' : 'False',
    reason: bad === 'healthy' ? 'NetworkingIsReady' : 'IPAMDNotReady',
    message: '',
    lastHeartbeatTime: new Date().toISOString(),
    lastTransitionTime: since,
  };
  const patch = JSON.stringify({ status: { conditions: [c] } });
  env.admin.kubectl('patch', 'node', name, '--subresource=status', '--type=strategic', '-p', patch);
}

const setInstanceHealthCalls = (env: Environment) =>
  env.aws.calls.filter((c) => c.action === 'SetInstanceHealth').length;

async function twoBadPass(
  env: Environment,
  names: readonly string[],
  pass: () => Promise<ReconcilePass>,
  say: (line: string) => void,
): Promise<RepairBench['twoBad']> {
  const n = names.length;
  setNetworking(env, names[Math.floor(n / 3)]!, { minutes: 40 });
  setNetworking(env, names[Math.floor((2 * n) / 3)]!, { minutes: 35 });
  const setBefore = setInstanceHealthCalls(env);
  const started = Date.now();
  const two = await pass();
  const repairEvents = readAudit(
    env.plane,
    (e) => byDrainer(e) && e.receivedMs >= started - 50 && e.resource === 'events' && e.verb === 'create',
  ).length;
  const setInstanceHealth = setInstanceHealthCalls(env) - setBefore;
  say(
    `repair: two bad: ${two.requests} requests, ${two.responseBytes} bytes, ${two.awsCalls} AWS calls, ` +
      `${setInstanceHealth} SetInstanceHealth, peak RSS ${two.maxRssMiB} MiB`,
  );
  return { ...two, setInstanceHealth, repairEvents };
}

async function stormPass(
  env: Environment,
  names: readonly string[],
  pass: () => Promise<ReconcilePass>,
  say: (line: string) => void,
): Promise<RepairBench['storm']> {
  const bad = Math.ceil(names.length / 4);
  say(`repair: ${bad} nodes bad (a storm)`);
  for (let k = 0; k < bad; k++) setNetworking(env, names[k]!, { minutes: 45 });
  const before = setInstanceHealthCalls(env);
  const storm = await pass();
  const setInstanceHealth = setInstanceHealthCalls(env) - before;
  say(
    `repair: storm: ${storm.requests} requests, ${storm.responseBytes} bytes, ${setInstanceHealth} SetInstanceHealth, ` +
      `peak RSS ${storm.maxRssMiB} MiB`,
  );
  return { ...storm, bad, setInstanceHealth };
}

export function repairTable(r: RepairBench): string {
  const largest = r.sizes.at(-1) ?? 0;
  const withPrevious = r.healthy.some((h) => h.previous !== undefined);
  const sizeRow = (label: string, cell: (p: ReconcilePass) => string) =>
    `| ${label} | ${r.healthy
      .map((h) => (withPrevious ? `${cell(h.current)} | ${h.previous ? cell(h.previous) : '–'}` : cell(h.current)))
      .join(' | ')} |`;
  const columns = r.healthy.flatMap((h) =>
    withPrevious ? [`${h.nodes} nodes`, `${h.nodes}, ${r.previousCommit ?? 'previous'}`] : [`${h.nodes} nodes`],
  );
  return [
    `| all healthy, one pass (V8 flags of a ${r.lambdaMemoryMiB} MB function) | ${columns.join(' | ')} |`,
    `|---|${columns.map(() => '---').join('|')}|`,
    sizeRow('peak RSS', (p) => `${p.maxRssMiB.toFixed(1)} MiB`),
    sizeRow('API requests', (p) => String(p.requests)),
    sizeRow('response bytes on the wire', (p) => `${(p.responseBytes / 1024).toFixed(1)} KiB`),
    sizeRow('the repair pass, its own timing', (p) => `${String(p.repair?.['durationMs'] ?? '?')} ms`),
    '',
    passTable(r, largest),
    '',
    `A stand-in node is ${r.nodeJsonBytes} bytes of JSON (with managedFields and the agent's five conditions); ` +
      `the V8 flags: ${r.v8Flags}.`,
  ].join('\n');
}

function passTable(r: RepairBench, nodes: number): string {
  const kinds = (p: ReconcilePass, of: 'requestsByKind' | 'awsCallsByAction') =>
    Object.entries(p[of])
      .map(([k, n]) => `${n} ${k}`)
      .join(', ');
  const passes = [r.healthy.at(-1)!.current, r.twoBad, r.storm];
  const row = (label: string, cell: (p: ReconcilePass) => string) => `| ${label} | ${passes.map(cell).join(' | ')} |`;
  return [
    `| one reconcile pass with REPAIR=on, ${nodes} nodes | all healthy | 2 bad past their rule | ${r.storm.bad} bad (storm) |`,
    '|---|---|---|---|',
    row('API requests', (p) => `${p.requests} (${kinds(p, 'requestsByKind')})`),
    row('response bytes on the wire', (p) => `${(p.responseBytes / 1024).toFixed(1)} KiB`),
    row('AWS calls (DescribeCluster included)', (p) => `${p.awsCalls} (${kinds(p, 'awsCallsByAction')})`),
    row('repair pass: unhealthy / replacing / deferred / held', (p) => {
      const x = p.repair ?? {};
      const n = (k: string) => (Array.isArray(x[k]) ? (x[k] as unknown[]).length : '?');
      return `${String(x['unhealthy'] ?? '?')} / ${n('replacing')} / ${n('deferred')} / ${n('held')}`;
    }),
    row(
      'the repair pass (its own timing) / peak RSS',
      (p) => `${String(p.repair?.['durationMs'] ?? '?')} ms / ${p.maxRssMiB.toFixed(1)} MiB`,
    ),
  ].join('\n');
}
