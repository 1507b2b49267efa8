// The surge section: the drain of a node running the only replica of a Deployment under a
// PodDisruptionBudget minAvailable: 1, with surge before evict and without (the budget refuses
// every eviction, so plain eviction ends only when the deadline policy deletes the pod: a short
// deadline), `runs` times each, alternating. Drain time from the notification to the drain's
// end (the handler's log), the fewest Ready pods from a watch, the drainer's requests from the
// audit log (from the notification to the drain's end).
import { startEnvironment } from '../demo/environment.js';
import { allowSurge, runSingleton, type SingletonRun } from '../demo/singleton-scenario.js';

export interface SurgeBench {
  readonly runs: number;
  readonly drainTimeoutSeconds: number;
  readonly surge: readonly SingletonRun[];
  readonly plain: readonly SingletonRun[];
}

export async function runSurgeBench(o: {
  say: (line: string) => void;
  runs: number;
  drainTimeoutSeconds: number;
}): Promise<SurgeBench> {
  const env = await startEnvironment({ log: o.say, loadBalancerDelaySeconds: 0 });
  try {
    allowSurge(env);
    const surge: SingletonRun[] = [];
    const plain: SingletonRun[] = [];
    for (let i = 1; i <= o.runs; i++) {
      surge.push(
        await runSingleton(env, {
          name: `surge-${i}`,
          surge: true,
          drainTimeoutSeconds: o.drainTimeoutSeconds,
          say: o.say,
        }),
      );
      plain.push(
        await runSingleton(env, {
          name: `plain-${i}`,
          surge: false,
          drainTimeoutSeconds: o.drainTimeoutSeconds,
          say: o.say,
        }),
      );
    }
    return { runs: o.runs, drainTimeoutSeconds: o.drainTimeoutSeconds, surge, plain };
  } finally {
    await env.stop();
  }
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export function surgeTable(b: SurgeBench): string {
  const cell = (runs: readonly SingletonRun[], f: (r: SingletonRun) => number) =>
    `${median(runs.map(f))} (${runs.map(f).join(', ')})`;
  const kinds = (runs: readonly SingletonRun[]) =>
    Object.entries(runs[0]!.requests)
      .sort((x, y) => y[1] - x[1])
      .map(([k, n]) => `${n} ${k}`)
      .join(', ');
  const row = (label: string, f: (runs: readonly SingletonRun[]) => string) =>
    `| ${label} | ${f(b.surge)} | ${f(b.plain)} |`;
  return [
    `| one replica under minAvailable: 1, DRAIN_TIMEOUT_SECONDS=${b.drainTimeoutSeconds}, force; median (each of ${b.runs} runs) | surge before evict | plain eviction |`,
    '|---|---|---|',
    row('drain time, s', (r) => cell(r, (x) => x.drainSeconds)),
    row('outcome', (r) => [...new Set(r.map((x) => x.outcome))].join(', ')),
    row('fewest Ready pods at any instant', (r) => cell(r, (x) => x.fewestReady)),
    row('drainer requests', (r) => cell(r, (x) => x.totalRequests)),
    row('Deployment patches', (r) => cell(r, (x) => x.deploymentPatches)),
    row('requests of the first run, by kind', kinds),
  ].join('\n');
}
