// npm run demo -- --scale-in-choice
// The custom termination policy on the local plane: Auto Scaling scales the group in by one and
// asks the function which instance to terminate. Its own suggestion (the default policy) comes
// busy node first: a running batch Job and the only checkout replica. The policy ranks the
// three by what their drain would cost and gives the idle node, with its reasons in Events;
// the hook then drains it. For comparison, the drain of Auto Scaling's own first suggestion.
import { createChoiceWorld, jobSeconds, scaleInPayload, type ChoiceNode } from './choice-world.js';
import { startEnvironment, type Environment } from './environment.js';

const t0 = Date.now();
const say = (line: string) => console.log(`[demo ${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s] ${line}`);

const env = await startEnvironment({ log: say, loadBalancerDelaySeconds: 2 });
let exitCode = 1;
/** Evictions the handler logged: the drains run one after the other. */
const evictions = { count: 0 };
try {
  say('node group demo-workers: 3 kwok nodes; Auto Scaling will suggest them in this order:');
  const nodes = await createChoiceWorld(env, 'demo');
  for (const n of nodes) say(`  ${n.instanceId} ${n.name}: ${describe(n)}`);
  const ranked: string[] = [];
  env.onHandlerLog((log) => {
    if (log['message'] === 'pod evicted') evictions.count++;
    if (log['message'] === 'termination policy ranked the candidates') {
      for (const r of log['ranked'] as { node: string; points: number; blockers: string[] }[]) {
        ranked.push(
          `  ${r.node}: ${r.points} points${r.blockers.length > 0 ? `, blocked: ${r.blockers.join(', ')}` : ''}`,
        );
      }
    }
  });

  say('scale-in by one: Auto Scaling invokes the custom termination policy with its suggestion');
  const started = Date.now();
  const answer = (await env.deliver(scaleInPayload(nodes))) as { InstanceIDs: string[] };
  say(`answer after ${Date.now() - started} ms: ${JSON.stringify(answer)}`);
  for (const line of ranked) say(line);
  for (const n of nodes) events(env, n.name);
  const chosen = nodes.find((n) => n.instanceId === answer.InstanceIDs[0]);
  if (chosen === undefined) throw new Error('the policy gave no instance');

  const policy = await drain(env, chosen);
  say(
    `the policy's choice, ${chosen.name}: ${policy.evicted} pods evicted, lifecycle action completed ${policy.seconds} s after the notification`,
  );
  // Auto Scaling alone would have taken its first suggestion: the same drain, on the busy node.
  const busy = nodes[0]!;
  const alone = await drain(env, busy);
  say(
    `Auto Scaling's own choice, ${busy.name}: ${alone.evicted} pods evicted (the only checkout replica among them), ` +
      `lifecycle action completed ${alone.seconds} s after the notification (the ${jobSeconds} s Job was waited for)`,
  );
  exitCode = chosen.role === 'idle' && policy.evicted === 0 ? 0 : 1;
} finally {
  await env.stop();
  say('control plane stopped');
}
process.exit(exitCode);

function describe(n: ChoiceNode): string {
  if (n.role === 'busy') return `a running ${jobSeconds} s batch Job, the only replica of shop/checkout, one nginx pod`;
  return n.role === 'web' ? 'both replicas of shop/nginx-b' : 'only DaemonSet pods';
}

function events(e: Environment, node: string): void {
  const text = e.admin.kubectl(
    'get',
    'events',
    '-A',
    '--field-selector',
    `involvedObject.name=${node}`,
    '-o',
    'custom-columns=REASON:.reason,MESSAGE:.message',
    '--no-headers',
  );
  for (const line of text
    .trim()
    .split('\n')
    .filter((l) => /ForTermination/.test(l)))
    say(`  event on ${node}: ${line.replace(/\s+/, ' ')}`);
}

async function drain(e: Environment, n: ChoiceNode): Promise<{ evicted: number; seconds: number }> {
  const before = evictions.count;
  say(`EC2_INSTANCE_TERMINATING ${n.instanceId} (${n.name}): the hook drains it`);
  const run = await e.terminate(n.instanceId);
  return { evicted: evictions.count - before, seconds: Math.round((Date.now() - run.notifiedMs) / 100) / 10 };
}
