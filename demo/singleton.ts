// npm run demo -- --singleton [--drain-timeout 60]
// Surge before evict on the local plane, told as a live timeline: a Deployment with one replica
// under a PodDisruptionBudget minAvailable: 1, annotated to surge, on a node Auto Scaling
// terminates. The drain restarts the Deployment (as `kubectl rollout restart`), the replacement
// becomes Ready on the other node, and only then does the old pod go; a watch counts the Ready
// pods at every instant. The same drain without the annotation follows, for comparison: the
// budget refuses the eviction until the deadline.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { integerOption, startEnvironment } from './environment.js';
import { startTimeline } from './timeline.js';
import { allowSurge, runSingleton } from './singleton-scenario.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    singleton: { type: 'boolean', default: true },
    // The plain drain's deadline: the budget holds it this long.
    'drain-timeout': { type: 'string', default: '30' },
    out: { type: 'string', default: join(root, 'demo', 'out', 'singleton-timeline.json') },
  },
});
const drainTimeoutSeconds = integerOption('drain-timeout', values['drain-timeout'], 10);

const { timeline, say } = startTimeline();
const env = await startEnvironment({ log: (line) => say(line), loadBalancerDelaySeconds: 1 });
let exitCode = 1;
try {
  allowSurge(env);
  say(
    'applied infra/kubernetes/surge.yaml: patch on Deployments for the drainer, fenced by a ValidatingAdmissionPolicy',
  );
  const surged = await runSingleton(env, { name: 'surge', surge: true, drainTimeoutSeconds, say });
  const plain = await runSingleton(env, { name: 'plain', surge: false, drainTimeoutSeconds, say });
  const summary = { surged, plain };
  say(
    `summary: with surge ${surged.outcome} in ${surged.drainSeconds} s, never below ${surged.fewestReady} Ready pod; plain eviction ${plain.outcome} in ${plain.drainSeconds} s, ${plain.fewestReady} Ready pods at its lowest`,
  );
  mkdirSync(dirname(values.out!), { recursive: true });
  writeFileSync(values.out!, JSON.stringify({ options: { drainTimeoutSeconds }, summary, timeline }, null, 2));
  say(`timeline written to ${values.out!.replace(`${root}/`, '')}`);
  exitCode = surged.outcome === 'drained' && surged.fewestReady >= 1 && surged.deploymentPatches === 1 ? 0 : 1;
} finally {
  await env.stop();
  say('control plane stopped');
}
process.exit(exitCode);
