// The repair section: what node auto repair adds to one reconcile pass at fleet size (2,000
// nodes of realistic size, each with the node monitoring agent's five conditions, all in the
// served group), run by the deployed bundle in a fresh process as one invocation of the
// schedule: every node healthy; two nodes bad past their rule (one replaced, one deferred by
// the parallel limit); and a storm (a quarter of the group bad: nothing repaired). Requests
// from the audit log, bytes from the counting proxy, AWS calls from the local endpoint.
import { groupName, startEnvironment } from '../demo/environment.js';
import { readAudit, byDrainer } from '../test/cluster/kube.js';
import { fillerNode, fillersSettled } from './fleet.js';
import { reconcilePass, type ReconcilePass, type ReconcileProbe } from './reconcile.js';

export interface RepairBench {
  readonly nodes: number;
  readonly nodeJsonBytes: number;
  readonly healthy: ReconcilePass;
  /** The all-healthy pass again with V8's old space capped at 96 MiB: whether it fits (peak RSS of an uncapped process is V8 growing lazily, not need). */
  readonly capped: {
    readonly maxOldSpaceMiB: number;
    readonly ok: boolean;
    readonly maxRssMiB?: number;
    readonly error?: string;
  };
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

export async function runRepairBench(o: {
  say: (line: string) => void;
  bundlePath: string;
  nodes: number;
}): Promise<RepairBench> {
  const { say } = o;
  const env = await startEnvironment({
    log: say,
    loadBalancerDelaySeconds: 0,
    manyNodesWithoutKubelet: true,
    countBytes: true,
  });
  try {
    const a = env.admin;
    say(
      `repair: creating ${o.nodes} stand-in nodes of realistic size, with the agent's conditions, in group ${groupName}`,
    );
    const names: string[] = [];
    let next = 0;
    const create = async () => {
      for (let i = next++; i < o.nodes; i = next++) {
        const body = fillerNode(i, ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'][i % 3]!);
        body.status!.conditions!.push(...agentConditions(new Date()));
        await a.core.createNode({ body });
        const instanceId = body.spec!.providerID!.split('/').pop()!;
        env.aws.instances.set(instanceId, {
          privateDnsName: body.metadata!.name!,
          group: groupName,
          lifecycleState: 'InService',
        });
        names[i] = body.metadata!.name!;
        if ((i + 1) % 500 === 0) say(`repair: ${i + 1} of ${o.nodes} stand-in nodes`);
      }
    };
    await Promise.all(Array.from({ length: 16 }, create));
    await fillersSettled(
      a,
      (tainted) => say(`repair: ${tainted} stand-in nodes still carry the not-ready taint`),
      5_000,
    );
    const nodeJsonBytes = Buffer.byteLength(JSON.stringify(await a.core.readNode({ name: names[0]! })));
    const probe: ReconcileProbe = { env, bundlePath: o.bundlePath, nodes: async () => o.nodes };
    const variables = { REPAIR: 'on' };
    const healthy = await reconcilePass(probe, variables);
    say(
      `repair: ${o.nodes} nodes, all healthy: ${healthy.requests} requests, ${healthy.responseBytes} bytes, ${healthy.awsCalls} AWS calls`,
    );
    const maxOldSpaceMiB = 96;
    const capped: RepairBench['capped'] = await reconcilePass(probe, {
      ...variables,
      NODE_OPTIONS: `--max-old-space-size=${maxOldSpaceMiB}`,
    }).then(
      (p) => ({ maxOldSpaceMiB, ok: true, maxRssMiB: p.maxRssMiB }),
      (error: unknown) => ({ maxOldSpaceMiB, ok: false, error: String(error).slice(0, 300) }),
    );
    say(
      `repair: the same pass with --max-old-space-size=${maxOldSpaceMiB}: ${capped.ok ? `fits, peak RSS ${capped.maxRssMiB} MiB` : `fails: ${capped.error}`}`,
    );

    const bad = (name: string, minutes: number) => {
      const since = new Date(Date.now() - minutes * 60_000).toISOString();
      const c = {
        type: 'NetworkingReady',
        status: 'False',
        reason: 'IPAMDNotReady',
        message: '',
        lastHeartbeatTime: new Date().toISOString(),
        lastTransitionTime: since,
      };
      a.kubectl(
        'patch',
        'node',
        name,
        '--subresource=status',
        '--type=strategic',
        '-p',
        JSON.stringify({ status: { conditions: [c] } }),
      );
    };
    bad(names[Math.floor(o.nodes / 3)]!, 40);
    bad(names[Math.floor((2 * o.nodes) / 3)]!, 35);
    const setBefore = env.aws.calls.filter((c) => c.action === 'SetInstanceHealth').length;
    const started = Date.now();
    const two = await reconcilePass(probe, variables);
    const repairEvents = readAudit(
      env.plane,
      (e) => byDrainer(e) && e.receivedMs >= started - 50 && e.resource === 'events' && e.verb === 'create',
    ).length;
    const twoBad = {
      ...two,
      setInstanceHealth: env.aws.calls.filter((c) => c.action === 'SetInstanceHealth').length - setBefore,
      repairEvents,
    };
    say(
      `repair: two bad: ${two.requests} requests, ${two.responseBytes} bytes, ${two.awsCalls} AWS calls, ${twoBad.setInstanceHealth} SetInstanceHealth`,
    );

    const stormCount = Math.ceil(o.nodes / 4);
    say(`repair: ${stormCount} nodes bad (a storm)`);
    for (let k = 0; k < stormCount; k++) bad(names[k]!, 45);
    const stormBefore = env.aws.calls.filter((c) => c.action === 'SetInstanceHealth').length;
    const stormPass = await reconcilePass(probe, variables);
    const storm = {
      ...stormPass,
      bad: stormCount,
      setInstanceHealth: env.aws.calls.filter((c) => c.action === 'SetInstanceHealth').length - stormBefore,
    };
    say(
      `repair: storm: ${stormPass.requests} requests, ${stormPass.responseBytes} bytes, ${storm.setInstanceHealth} SetInstanceHealth`,
    );
    return { nodes: o.nodes, nodeJsonBytes, healthy, capped, twoBad, storm };
  } finally {
    await env.stop();
  }
}

export function repairTable(r: RepairBench): string {
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  const kinds = (p: ReconcilePass, of: 'requestsByKind' | 'awsCallsByAction') =>
    Object.entries(p[of])
      .map(([k, n]) => `${n} ${k}`)
      .join(', ');
  const passes = [r.healthy, r.twoBad, r.storm];
  const row = (label: string, cell: (p: ReconcilePass) => string) => `| ${label} | ${passes.map(cell).join(' | ')} |`;
  return [
    `| one reconcile pass with REPAIR=on (the bundle in a fresh process), ${r.nodes} nodes | all healthy | 2 bad past their rule | ${r.storm.bad} bad (storm) |`,
    '|---|---|---|---|',
    row('API requests', (p) => `${p.requests} (${kinds(p, 'requestsByKind')})`),
    row('response bytes on the wire', (p) => kb(p.responseBytes)),
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
    '',
    `All healthy again with V8's old space capped at ${r.capped.maxOldSpaceMiB} MiB: ${r.capped.ok ? `fits, peak RSS ${r.capped.maxRssMiB} MiB` : `fails (${r.capped.error})`}.`,
    `A stand-in node is ${r.nodeJsonBytes} bytes of JSON (with managedFields and the agent's five conditions).`,
  ].join('\n');
}
