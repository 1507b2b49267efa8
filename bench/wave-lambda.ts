// Lambda's side of a wave or a rotation, as the bench plays it: every notification is its own
// asynchronous invocation (a container of its own unless one is free, demo/environment.ts's
// containerPerInvocation); a failed invocation is delivered again about 1 and then 2 minutes
// later, as Lambda retries an asynchronous (SNS) invocation. Counts invocations, hand-offs,
// failures and retries, and what the handler logged (WARN and ERROR lines by message, siblings
// marked ahead, the AWS calls it reported), between start() and stop().
import type { Environment } from '../demo/environment.js';

/** Lambda retries a failed asynchronous invocation twice: after about 1 and 2 minutes. */
export const retryDelaysMs = [60_000, 120_000];

export interface LambdaPlay {
  readonly invocations: {
    started: number;
    handOffs: number;
    failed: number;
    retried: number;
    inFlight: number;
    retriesDue: number;
    readonly failures: string[];
  };
  /** The AWS calls the handler's `termination handled` lines add up to (a call counted once, however often retried). */
  awsCallsReported(): number;
  handlerLog(): ReturnType<ReturnType<typeof newHandlerLogStats>['result']>;
  /** Every invocation started since start() ended, and no retry is due. */
  idle(): boolean;
  start(): void;
  stop(): void;
}

export function playLambda(env: Environment): LambdaPlay {
  const invocations = {
    started: 0,
    handOffs: 0,
    failed: 0,
    retried: 0,
    inFlight: 0,
    retriesDue: 0,
    failures: [] as string[],
  };
  const attempts = new WeakMap<object, number>();
  let counting = false;
  env.onInvocation((inv) => {
    if (!counting) return;
    invocations.started++;
    invocations.inFlight++;
    if (inv.handOff) invocations.handOffs++;
    inv.run
      .catch((error: unknown) => {
        invocations.failed++;
        invocations.failures.push((error as Error).message);
        const n = attempts.get(inv.event as object) ?? 0;
        if (n >= retryDelaysMs.length) return;
        attempts.set(inv.event as object, n + 1);
        invocations.retriesDue++;
        setTimeout(() => {
          invocations.retriesDue--;
          invocations.retried++;
          env.deliver(inv.event).catch(() => undefined);
        }, retryDelaysMs[n]);
      })
      .finally(() => invocations.inFlight--);
  });
  let awsCallsReported = 0;
  const handlerLog = newHandlerLogStats();
  env.onHandlerLog((log) => {
    if (!counting) return;
    const calls =
      log['message'] === 'termination handled' ? (log['awsCalls'] as Record<string, number> | undefined) : undefined;
    if (calls) awsCallsReported += Object.values(calls).reduce((s, n) => s + n, 0);
    handlerLog.add(log);
  });
  return {
    invocations,
    awsCallsReported: () => awsCallsReported,
    handlerLog: () => handlerLog.result(),
    idle: () => invocations.inFlight === 0 && invocations.retriesDue === 0,
    start: () => void (counting = true),
    stop: () => void (counting = false),
  };
}

/**
 * What the handler logged: WARN and ERROR lines by message, the first distinct errors with
 * where they came from, and how many sibling nodes its drains marked ahead.
 */
export function newHandlerLogStats() {
  const warnings: Record<string, number> = {};
  const errors: Record<string, number> = {};
  const samples = new Set<string>();
  let siblingsMarkedAhead = 0;
  let siblingMarkings = 0;
  return {
    add(log: Record<string, unknown>) {
      const message = String(log['message']);
      if (message === "marked the nodes of the group's other leaving instances before evicting") {
        siblingMarkings++;
        siblingsMarkedAhead += Number(log['marked'] ?? 0);
      }
      if (log['level'] === 'WARN') warnings[message] = (warnings[message] ?? 0) + 1;
      if (log['level'] !== 'ERROR' && log['level'] !== 'WARN') return;
      if (log['level'] === 'ERROR') errors[message] = (errors[message] ?? 0) + 1;
      const error = (log['error'] ?? log['cause']) as
        { name?: string; message?: string; location?: string } | undefined;
      if (error && samples.size < 8)
        samples.add(
          `${String(log['level'])} ${message}: ${error.name ?? ''} ${error.message ?? ''} at ${error.location ?? '?'}`,
        );
    },
    result: () => ({ warnings, errors, samples: [...samples], siblingMarkings, siblingsMarkedAhead }),
  };
}
