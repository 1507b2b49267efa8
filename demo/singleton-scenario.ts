// One drain of a node that runs the only replica of a Deployment under a minAvailable: 1 budget
// (demo/singleton.ts tells it, bench/surge.ts measures it): with surge before evict the
// Deployment is restarted and the pod evicted once its replacement is Ready elsewhere; without,
// the budget refuses every eviction until the drain deadline.
import {
  byDrainer,
  createDeployment,
  createPdb,
  ensureNamespace,
  eventsFor,
  readAudit,
  surgeFile,
  until,
  waitDeploymentReady,
  waitNodeReady,
  watchReady,
} from '../test/cluster/kube.js';
import { requestsByKind } from '../bench/wire.js';
import { newInstanceId } from '../test/cluster/kube.js';
import type { Environment } from './environment.js';

export interface SingletonRun {
  readonly surge: boolean;
  readonly drainTimeoutSeconds: number;
  /** From the notification to the drain's end (drained, or its deadline). */
  readonly drainSeconds: number;
  readonly outcome: string;
  /** The fewest Ready pods of the Deployment at any instant, from a watch. */
  readonly fewestReady: number;
  /** The drainer's requests to the API server, from the audit log, by kind. */
  readonly requests: Record<string, number>;
  readonly totalRequests: number;
  readonly deploymentPatches: number;
}

const namespace = 'shop';

/** The drainer's surge rights and policy, as a user of rbac.yaml applies them (once per plane). */
export function allowSurge(env: Environment): void {
  env.admin.kubectl('apply', '-f', surgeFile);
}

export async function runSingleton(
  env: Environment,
  o: {
    readonly name: string;
    readonly surge: boolean;
    readonly drainTimeoutSeconds: number;
    readonly say: (line: string, source?: string) => void;
  },
): Promise<SingletonRun> {
  const a = env.admin;
  const { name, say } = o;
  const instanceId = newInstanceId();
  await env.addNode(`${name}-1`, instanceId, { scenario: name });
  await env.addNode(`${name}-2`, newInstanceId(), { scenario: name });
  await waitNodeReady(a, `${name}-1`);
  await waitNodeReady(a, `${name}-2`);
  await ensureNamespace(a, namespace);
  // Its one pod starts on -1 (the node that leaves); a replacement takes 2 s to be Ready; a
  // 5 s grace period, so DEADLINE_POLICY=force deletes it 5 s before the deadline.
  a.kubectl('cordon', `${name}-2`);
  const annotations: Record<string, string> = o.surge ? { 'graceful-node-termination/surge-before-evict': 'true' } : {};
  await createDeployment(a, namespace, name, 1, {
    nodeSelector: { scenario: name },
    readinessProbe: true,
    readyDelay: '2s',
    deleteDelay: '1s',
    terminationGracePeriodSeconds: 5,
    deploymentAnnotations: annotations,
  });
  await waitDeploymentReady(a, namespace, name, 1);
  a.kubectl('uncordon', `${name}-2`);
  await createPdb(a, namespace, name, name, 1);
  say(
    `${namespace}/${name}: 1 replica on ${name}-1 under PodDisruptionBudget minAvailable 1${o.surge ? ', annotated graceful-node-termination/surge-before-evict: "true"' : ''}`,
  );

  const watch = await watchReady(a, namespace, name);
  watch.onChange((line) => say(line, 'cluster'));
  let endedMs: number | undefined;
  let outcome = 'unknown';
  env.onHandlerLog((log) => {
    const message = String(log['message']);
    if (log['node'] !== undefined && log['node'] !== `${name}-1`) return;
    if (
      /^drain started|^surge before evict|^pod evicted|^node drained|^drain deadline reached|^pod force-deleted|^eviction blocked/.test(
        message,
      )
    ) {
      const extra = [
        'secondsToDeadline',
        'deployment',
        'restartedAt',
        'replacement',
        'on',
        'seconds',
        'reason',
        'pod',
        'budget',
        'policy',
        'forced',
      ]
        .filter((k) => log[k] !== undefined)
        .map((k) => `${k}=${String(log[k])}`);
      say(`${message}${extra.length ? `  ${extra.join(' ')}` : ''}`, 'handler');
    }
    if (endedMs === undefined && (message === 'node drained' || message.startsWith('drain deadline reached'))) {
      endedMs = Date.now();
      outcome = message === 'node drained' ? 'drained' : 'timed-out';
    }
  });
  const settings = {
    SURGE_BEFORE_EVICT: String(o.surge),
    DRAIN_TIMEOUT_SECONDS: String(o.drainTimeoutSeconds),
    MIN_EVICTION_WINDOW_SECONDS: '10',
  };
  const since = Date.now();
  say(
    `Auto Scaling terminates ${instanceId} (${name}-1)${o.surge ? ' with SURGE_BEFORE_EVICT=true' : ''}, DRAIN_TIMEOUT_SECONDS=${o.drainTimeoutSeconds}`,
    'autoscaling',
  );
  const run = await env.terminate(instanceId, { settings });
  await until('the drain end logged', 10_000, async () => endedMs !== undefined);
  watch.stop();
  for (const e of (await eventsFor(a, 'Node', `${name}-1`)).filter((x) => x.reason.startsWith('Surge')))
    say(`Event ${e.type} ${e.reason}: ${e.message}`, 'cluster');
  const entries = readAudit(
    env.plane,
    (e) => byDrainer(e) && e.receivedMs >= since && e.receivedMs <= (endedMs ?? Date.now()),
  );
  const requests = requestsByKind(entries);
  const result = {
    surge: o.surge,
    drainTimeoutSeconds: o.drainTimeoutSeconds,
    drainSeconds: Math.round((endedMs! - run.notifiedMs) / 100) / 10,
    outcome,
    fewestReady: watch.min(),
    requests,
    totalRequests: entries.length,
    deploymentPatches: entries.filter((e) => e.resource === 'deployments' && e.verb === 'patch').length,
  };
  say(
    `${o.surge ? 'with surge' : 'plain eviction'}: ${result.outcome} in ${result.drainSeconds} s (deadline ${o.drainTimeoutSeconds} s), fewest Ready pods ${result.fewestReady}, ${result.totalRequests} requests (${result.deploymentPatches} Deployment patch)`,
  );
  return result;
}
