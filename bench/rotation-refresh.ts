// The instance refresh a rotation bench plays: demo/instance-refresh.ts's stand-in (the Started
// event, launch-before-terminate batches sized by MaxHealthyPercentage, the Succeeded event) with
// what a fleet-size measure needs besides: every notification an asynchronous Lambda invocation
// with Lambda's retries (bench/wave-lambda.ts) rather than a call awaited in turn, so a failed
// invocation is retried as in AWS instead of failing the refresh; new instances as EKS-size kwok
// nodes (bench/wave-fleet.ts); a batch's terminate notifications spread over a couple of seconds
// as SNS delivers one scaling activity's; and each batch timed.
import { groupName, type Environment } from '../demo/environment.js';
import { refreshEvent } from '../demo/instance-refresh.js';
import type { LocalRefresh } from '../demo/local-aws.js';
import { seeded } from '../test/cluster/fault-proxy.js';
import { sleep, until } from '../test/cluster/kube.js';
import { round } from './fleet.js';
import { waveNode, type FleetNode } from './wave-fleet.js';

export interface Termination {
  readonly instanceId: string;
  readonly notifiedMs: number;
  /** When its lifecycle action was completed (CONTINUE): released. */
  completedMs?: number;
}

export interface BatchTiming {
  readonly instances: number;
  readonly launchSeconds: number;
  readonly terminateSeconds: number;
}

export interface RefreshPlay {
  readonly terminations: Termination[];
  readonly batches: BatchTiming[];
  /** When the refresh was answered, and when its last termination completed. */
  readonly startedMs: number;
  endedMs: number;
  done: Promise<void>;
}

const terminateWindowMs = 2_000;

/** Completed (CONTINUE) lifecycle actions by token. */
function completedAt(env: Environment, tokens: ReadonlyMap<string, unknown>): Map<string, number> {
  const out = new Map<string, number>();
  for (const c of env.aws.calls)
    if (c.action === 'CompleteLifecycleAction' && c.outcome === 'ok') {
      const token = c.params['LifecycleActionToken'] ?? '';
      if (tokens.has(token) && !out.has(token)) out.set(token, c.atMs);
    }
  return out;
}

/** Delivers each notification as its own invocation (Lambda retries a failed one); resolves once all are completed. */
async function untilCompleted(
  env: Environment,
  what: string,
  tokens: ReadonlyMap<string, unknown>,
  idle: () => boolean,
  say: (line: string) => void,
): Promise<Map<string, number>> {
  let lastSaid = Date.now();
  let done = new Map<string, number>();
  await until(
    what,
    60 * 60_000,
    async () => {
      done = completedAt(env, tokens);
      if (done.size < tokens.size && idle())
        throw new Error(
          `${what}: ${tokens.size - done.size} lifecycle actions never completed (every invocation and retry over)`,
        );
      if (Date.now() - lastSaid > 15_000) {
        lastSaid = Date.now();
        say(`${what}: ${done.size} of ${tokens.size} completed`);
      }
      return done.size === tokens.size;
    },
    250,
  );
  return done;
}

/** Plays the refresh: Started, then each batch launched (admitted by the launch hook), then terminated (drained). */
export function playRefresh(
  env: Environment,
  refresh: LocalRefresh,
  o: {
    readonly old: readonly FleetNode[];
    /** The index the new nodes' names and addresses start from. */
    readonly firstNewIndex: number;
    readonly idle: () => boolean;
    readonly say: (line: string) => void;
    /** Called after the Started event and after each batch ("started", "batch N"); the play waits for it. */
    readonly afterStep?: (after: string) => Promise<void>;
  },
): RefreshPlay {
  const random = seeded(40);
  const play: RefreshPlay = {
    terminations: [],
    batches: [],
    startedMs: Date.now(),
    endedMs: 0,
    done: Promise.resolve(),
  };
  const batch = Math.max(1, Math.floor((o.old.length * (refresh.maxHealthyPercentage - 100)) / 100));
  let next = o.firstNewIndex;
  const launch = async (count: number) => {
    const tokens = new Map<string, string>();
    await Promise.all(
      Array.from({ length: count }, async () => {
        const { node, instanceId } = waveNode(next++);
        env.aws.instances.set(instanceId, {
          privateDnsName: node.metadata!.name!,
          group: groupName,
          lifecycleState: 'Pending:Wait',
          version: refresh.desiredVersion,
        });
        const { token, event } = env.notify(instanceId, 'LAUNCHING');
        tokens.set(token, instanceId);
        env.deliver(event).catch(() => undefined);
        // The instance boots while the launch hook waits for its node.
        await env.admin.core.createNode({ body: node });
      }),
    );
    await untilCompleted(env, `launching ${count}`, tokens, o.idle, o.say);
  };
  const terminate = async (nodes: readonly FleetNode[]) => {
    const tokens = new Map<string, Termination>();
    const offsets = nodes.map(() => Math.round(random() * terminateWindowMs)).sort((x, y) => x - y);
    await Promise.all(
      nodes.map(async (n, i) => {
        await sleep(offsets[i]!);
        const { token, notifiedMs, event } = env.notify(n.instanceId);
        const t: Termination = { instanceId: n.instanceId, notifiedMs };
        tokens.set(token, t);
        play.terminations.push(t);
        env.deliver(event).catch(() => undefined);
      }),
    );
    const done = await untilCompleted(env, `terminating ${nodes.length}`, tokens, o.idle, o.say);
    for (const [token, atMs] of done) tokens.get(token)!.completedMs = atMs;
    // The instances terminate: the group forgets them, the cloud controller deletes their nodes.
    for (const n of nodes) env.aws.instances.delete(n.instanceId);
    await Promise.all(nodes.map((n) => env.admin.core.deleteNode({ name: n.name }).catch(() => undefined)));
  };
  play.done = (async () => {
    refresh.status = 'InProgress';
    refresh.instancesToUpdate = o.old.length;
    o.say(
      `auto scaling: instance refresh ${refresh.id.slice(0, 8)} InProgress: ${o.old.length} instances, ${batch} at a time, launch before terminate`,
    );
    // EventBridge invokes the function on the refresh's start (the outdated nodes marked); EC2
    // boots the first batch meanwhile, which takes longer than the marking.
    await env
      .deliver(refreshEvent('Started', refresh))
      .catch((e: unknown) => o.say(`the Started event failed: ${String(e)}`));
    await o.afterStep?.('started');
    for (let i = 0; i < o.old.length; i += batch) {
      const old = o.old.slice(i, i + batch);
      const t0 = Date.now();
      await launch(old.length);
      const t1 = Date.now();
      await terminate(old);
      await o.afterStep?.(`batch ${play.batches.length + 1}`);
      play.batches.push({
        instances: old.length,
        launchSeconds: round((t1 - t0) / 1000),
        terminateSeconds: round((Date.now() - t1) / 1000),
      });
      refresh.instancesToUpdate = o.old.length - Math.min(o.old.length, i + batch);
      refresh.percentageComplete = Math.round((100 * (o.old.length - refresh.instancesToUpdate)) / o.old.length);
      o.say(
        `auto scaling: batch ${play.batches.length} (${old.length} instances): launched in ${play.batches.at(-1)!.launchSeconds} s, drained and terminated in ${play.batches.at(-1)!.terminateSeconds} s; ${refresh.percentageComplete} % done`,
      );
    }
    play.endedMs = Math.max(...play.terminations.map((t) => t.completedMs ?? 0));
    refresh.status = 'Successful';
    await env
      .deliver(refreshEvent('Succeeded', refresh))
      .catch((e: unknown) => o.say(`the Succeeded event failed: ${String(e)}`));
  })();
  return play;
}
