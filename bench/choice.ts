// npm run bench -- --sections choice: the custom termination policy (issue 29). What one
// decision costs at a small cluster and at 2,000 nodes (requests from the audit log, bytes from
// the counting proxy, the answer's time: it must come within Auto Scaling's two seconds), and
// what the same scale-in costs with the policy and without it (Auto Scaling's own first
// suggestion): pods evicted and seconds from the notification to the completed action.
import { byDrainer, readAudit, sleep } from '../test/cluster/kube.js';
import { createChoiceWorld, jobSeconds, scaleInPayload, startJob, type ChoiceNode } from '../demo/choice-world.js';
import { startEnvironment, type Environment } from '../demo/environment.js';
import { fillerNode, fillersSettled, round } from './fleet.js';

export interface Decision {
  readonly nodes: number;
  readonly answer: readonly string[];
  /** The first call of a fresh container (its cluster connection included), then warm calls. */
  readonly firstMs: number;
  readonly warmMedianMs: number;
  readonly requests: number;
  readonly bytes: number;
  readonly requestKinds: Readonly<Record<string, number>>;
}

export interface ScaleInCost {
  readonly node: string;
  readonly podsEvicted: number;
  readonly secondsToCompletion: number;
}

const countNodes = async (env: Environment) =>
  ((await env.admin.core.listNode({ limit: 1 })).metadata?.remainingItemCount ?? 0) + 1;

async function growTo(env: Environment, total: number, say: (line: string) => void): Promise<number> {
  let next = await countNodes(env);
  const create = async () => {
    for (let i = next++; i < total; i = next++) {
      await env.admin.core.createNode({ body: fillerNode(i, 'eu-west-1a') });
      if ((i + 1) % 500 === 0) say(`${i + 1} nodes`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, create));
  await fillersSettled(env.admin, () => {}, 3_000);
  return countNodes(env);
}

/** One cold decision (a container of its own) and five warm ones; requests and bytes of the warm ones, each. */
async function decide(env: Environment, nodes: readonly ChoiceNode[], label: string): Promise<Decision> {
  const payload = scaleInPayload(nodes);
  const settings = { BENCH_CONTAINER: label };
  let started = Date.now();
  const first = (await env.deliver(payload, { settings })) as { InstanceIDs: string[] };
  const firstMs = Date.now() - started;
  await sleep(500);
  const times: number[] = [];
  const [answers, since] = [env.proxy!.counts.answers.length, Date.now()];
  for (let i = 0; i < 5; i++) {
    started = Date.now();
    await env.deliver(payload, { settings });
    times.push(Date.now() - started);
  }
  await sleep(500);
  const requests = readAudit(env.plane, (e) => byDrainer(e) && e.receivedMs >= since - 20 && e.verb !== 'create');
  const kinds: Record<string, number> = {};
  for (const e of requests) kinds[`${e.verb} ${e.resource}`] = (kinds[`${e.verb} ${e.resource}`] ?? 0) + 1;
  const bytes = env.proxy!.counts.answers.slice(answers).reduce((n, a) => n + a.bytes, 0);
  times.sort((x, y) => x - y);
  return {
    nodes: await countNodes(env),
    answer: first.InstanceIDs,
    firstMs,
    warmMedianMs: times[2]!,
    requests: round(requests.length / 5),
    bytes: Math.round(bytes / 5),
    requestKinds: Object.fromEntries(Object.entries(kinds).map(([k, n]) => [k, round(n / 5)])),
  };
}

async function scaleIn(env: Environment, node: ChoiceNode): Promise<ScaleInCost> {
  let evicted = 0;
  env.onHandlerLog((l) => void (l['message'] === 'pod evicted' && evicted++));
  const before = evicted;
  const run = await env.terminate(node.instanceId);
  const done = env.aws.calls.find(
    (c) =>
      c.action === 'CompleteLifecycleAction' && c.outcome === 'ok' && c.params['LifecycleActionToken'] === run.token,
  );
  return {
    node: node.role,
    podsEvicted: evicted - before,
    secondsToCompletion: round(((done?.atMs ?? Date.now()) - run.notifiedMs) / 1000),
  };
}

export async function runChoiceSection(o: {
  say: (line: string) => void;
  smallNodes: number;
  largeNodes: number;
}): Promise<Record<string, unknown>> {
  const say = (line: string) => o.say(`choice: ${line}`);
  const env = await startEnvironment({
    log: say,
    loadBalancerDelaySeconds: 2,
    manyNodesWithoutKubelet: true,
    countBytes: true,
  });
  try {
    const nodes = await createChoiceWorld(env, 'bench');
    await growTo(env, o.smallNodes, say);
    const small = await decide(env, nodes, 'small');
    say(
      `at ${small.nodes} nodes: ${small.requests} requests, ${small.bytes} bytes a decision; answer in ${small.firstMs} ms cold, ${small.warmMedianMs} ms warm`,
    );
    await growTo(env, o.largeNodes, say);
    const large = await decide(env, nodes, 'large');
    say(
      `at ${large.nodes} nodes: ${large.requests} requests, ${large.bytes} bytes a decision; answer in ${large.firstMs} ms cold, ${large.warmMedianMs} ms warm`,
    );
    const chosen = nodes.find((n) => n.instanceId === large.answer[0]);
    if (chosen === undefined) throw new Error(`choice: the policy gave ${JSON.stringify(large.answer)}`);
    // The same scale-in, both ways, with the busy node's batch Job just started (the first ran out while the cluster grew).
    await startJob(env, nodes[0]!, 'nightly-report-again');
    const withPolicy = await scaleIn(env, chosen);
    const without = await scaleIn(env, nodes[0]!);
    say(
      `with the policy: ${withPolicy.podsEvicted} pods evicted, ${withPolicy.secondsToCompletion} s; without: ${without.podsEvicted} pods, ${without.secondsToCompletion} s`,
    );
    return {
      decisions: [small, large],
      bytesRatio: round(large.bytes / small.bytes),
      requestsRatio: round(large.requests / small.requests),
      scaleIn: { withPolicy, withoutPolicy: without, jobSeconds },
    };
  } finally {
    await env.stop();
  }
}

export function choiceTable(c: {
  decisions: Decision[];
  bytesRatio: number;
  scaleIn: { withPolicy: ScaleInCost; withoutPolicy: ScaleInCost };
}): string {
  const rows = c.decisions.map(
    (d) =>
      `| ${d.nodes} | ${d.requests} | ${(d.bytes / 1024).toFixed(1)} KiB | ${d.firstMs} ms | ${d.warmMedianMs} ms |`,
  );
  const s = c.scaleIn;
  return [
    '| nodes | requests / decision | bytes / decision | answer (cold container) | answer (warm, median of 5) |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    '| same scale-in | node taken | pods evicted | notification to completed action |',
    '|---|---|---|---|',
    `| with the policy | ${s.withPolicy.node} | ${s.withPolicy.podsEvicted} | ${s.withPolicy.secondsToCompletion} s |`,
    `| Auto Scaling alone | ${s.withoutPolicy.node} | ${s.withoutPolicy.podsEvicted} | ${s.withoutPolicy.secondsToCompletion} s |`,
  ].join('\n');
}
