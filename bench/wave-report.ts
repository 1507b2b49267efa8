// What the wave section reports: the wave's numbers by kind (refusals, AWS calls by action,
// the rate limits it ran under) and its table, this tree's beside the previous version's.
import type { RateLimit } from '../demo/aws-rate-limits.js';
import type { AwsCall } from '../demo/local-aws.js';
import type { AuditEntry } from '../test/cluster/kube.js';
import { peakConcurrency } from './fleet.js';
import type { LambdaPlay } from './wave-lambda.js';
import { kindOf, requestsByKind } from './wire.js';
import { parseDrainRecord } from '../lambda/cluster/marks/drain-record.js';
import { drainAnnotation } from '../lambda/cluster/marks/mark-keys.js';

const refusedByBudget = (e: Pick<AuditEntry, 'code' | 'message'>) =>
  e.code === 429 && /disruption budget/i.test(e.message);

/** A patch of a node itself (not its status): a marking, a drain's record, or their taking back. */
export const isNodePatch = (e: AuditEntry) =>
  e.verb === 'patch' && e.resource === 'nodes' && e.subresource === undefined;

/**
 * Whether a node patch wrote a sibling's marking ahead: its drain record read as the handler reads it (drain-record.ts:
 * the record of a marking ahead names no action). A drain's own record keeps `aheadOf` after adopting those marks.
 */
export function marksAhead(e: AuditEntry): boolean {
  const annotations = (e.requestObject as { metadata?: { annotations?: Record<string, unknown> } } | undefined)
    ?.metadata?.annotations;
  const raw = annotations?.[drainAnnotation];
  return parseDrainRecord(typeof raw === 'string' ? raw : undefined)?.source.kind === 'marked-ahead';
}

/** What a span (a wave, a rotation) cost: the drainer's requests, the AWS calls, Lambda's invocations. */
export function spanSummary(
  requests: readonly AuditEntry[],
  aws: readonly AwsCall[],
  lambda: LambdaPlay,
  containers: number,
) {
  const invocations = lambda.invocations;
  return {
    requestsByKind: requestsByKind(requests),
    /** The refused ones among them, by kind and status (a budget's 429, a conflict's 409, APF's 429). */
    refusedByKind: refusedByKind(requests),
    /** Evictions a budget refused: at the pod's first ask or again, and when (seconds into the span). */
    budgetRefusals: budgetRefusals(requests),
    /** Node patches answered 409: what each most likely lost to. */
    conflictsAfter: conflictSources(requests),
    /** The Events created, by reason and kind of object: what a wave tells beyond its drains. */
    eventsByReason: eventsByReason(requests),
    peakRequestsInFlight: peakConcurrency(requests.filter((e) => e.verb !== 'watch')),
    throttled429: requests.filter((e) => e.code === 429 && !refusedByBudget(e)).length,
    awsCallsReportedByHandler: lambda.awsCallsReported(),
    awsCalls: awsByAction(aws),
    throttledCalls: aws.filter((c) => c.outcome === 'throttled').length,
    invocations: invocations.started,
    containers,
    handOffs: invocations.handOffs,
    invocationsFailed: invocations.failed,
    invocationsRetried: invocations.retried,
    failures: [...new Set(invocations.failures)].slice(0, 5),
    handlerLog: lambda.handlerLog(),
  };
}

/**
 * What a node patch answered 409 most likely lost to, from the drainer's successful writes to that node that finished
 * within 5 s before the refused one was received: a marking (a sibling's marking ahead, a drain's own marking or
 * record) when there was one, else a conditions patch of the status, else something the audit log does not show (the
 * kubelet's stand-in, the node controllers). A marking wins over a later conditions patch: a drain patches the
 * conditions right after its marking, so the last write before a refusal is often that patch while the marking is
 * what the refused write lost to (docs/benchmarks.md, "tried and taken back").
 */
export function conflictSources(requests: readonly AuditEntry[]): Record<string, number> {
  const out: Record<string, number> = {};
  const writes = requests.filter((e) => e.resource === 'nodes' && e.verb === 'patch');
  for (const c of writes) {
    if (c.code !== 409) continue;
    const before = writes.filter(
      (w) => w.name === c.name && w.code < 300 && w.atMs <= c.receivedMs && w.atMs >= c.receivedMs - 5_000,
    );
    const marking = before.filter(isNodePatch).at(-1);
    const key =
      marking !== undefined
        ? marksAhead(marking)
          ? "a sibling's marking ahead"
          : 'a marking or record of a drain'
        : before.length > 0
          ? 'a conditions patch (status)'
          : 'no write of ours within 5 s';
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

/**
 * The evictions a budget refused, split by whether the drainer had asked for that pod before (a pod's first ask meets
 * the budget unwatched; a pod asked again waited on the budget's watch first, eviction/budget-waits.ts), and by the
 * span's seconds in which they came (0-5, 5-10, 10-20, 20+ from the span's first request).
 */
export function budgetRefusals(requests: readonly AuditEntry[]): {
  firstAsk: number;
  askedAgain: number;
  bySeconds: Record<string, number>;
} {
  const evictions = requests.filter((e) => e.subresource === 'eviction').sort((x, y) => x.receivedMs - y.receivedMs);
  const startMs = Math.min(...requests.map((e) => e.receivedMs));
  const asked = new Set<string>();
  const out = { firstAsk: 0, askedAgain: 0, bySeconds: {} as Record<string, number> };
  for (const e of evictions) {
    const pod = `${e.namespace}/${e.name}`;
    const again = asked.has(pod);
    asked.add(pod);
    if (!refusedByBudget(e)) continue;
    if (again) out.askedAgain++;
    else out.firstAsk++;
    const s = (e.receivedMs - startMs) / 1000;
    const bucket = s < 5 ? '0-5 s' : s < 10 ? '5-10 s' : s < 20 ? '10-20 s' : '20 s and later';
    out.bySeconds[bucket] = (out.bySeconds[bucket] ?? 0) + 1;
  }
  return out;
}

export function eventsByReason(requests: readonly AuditEntry[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of requests) {
    if (e.resource !== 'events' || e.verb !== 'create' || e.code >= 300) continue;
    const o = e.requestObject as { reason?: string; regarding?: { kind?: string }; involvedObject?: { kind?: string } };
    const key = `${o?.regarding?.kind ?? o?.involvedObject?.kind ?? '?'}/${o?.reason ?? '?'}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

export function refusedByKind(
  requests: readonly {
    verb: string;
    resource: string;
    subresource: string | undefined;
    code: number;
    message: string;
  }[],
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of requests) {
    if (e.code < 300) continue;
    const why = e.code === 429 ? (refusedByBudget(e) ? ' (budget)' : ' (APF)') : '';
    const key = `${kindOf(e)} ${e.code}${why}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

export function awsByAction(
  calls: readonly { action: string; outcome: string }[],
): Record<string, { calls: number; throttled: number }> {
  const out: Record<string, { calls: number; throttled: number }> = {};
  for (const c of calls) {
    const row = (out[c.action] ??= { calls: 0, throttled: 0 });
    row.calls++;
    if (c.outcome === 'throttled') row.throttled++;
  }
  return out;
}

export function rateLimitsOf(limits: readonly RateLimit[]) {
  return limits.map((l) => ({
    family: l.family,
    capacity: l.capacity,
    refillPerSecond: l.refillPerSecond,
    bucket: l.perAction ? 'one per action' : 'one for the family',
  }));
}

type Results = Record<string, unknown>;

/** The wave behind target groups (bench/wave-targets.ts), with the issue's targets. */
const targetGroupRows: [string, string, string, string?][] = [
  ['ELB calls per termination, the handler’s', 'loadBalancers.handlerCallsPerTermination', ''],
  ['single drain: ELB calls', 'singleDrain.elbCalls', ''],
  ['ELB calls throttled, the handler’s', 'loadBalancers.handlerThrottled', '', '0'],
  ['ELB calls of the controller: reconciles + periodic reads', 'loadBalancers.controllerCallsByKind.reconcile', ''],
  ['ELB calls throttled, the controller’s', 'loadBalancers.controllerThrottled', '', '0'],
  ['controller reconciles failed (requeued)', 'loadBalancers.controller.reconcilesFailed', ''],
  ['released after the last group let go: median / p99 / max (s)', 'loadBalancers.release.medianSeconds', '', '≤ 15'],
  ['of them within 15 s', 'loadBalancers.release.within15Seconds', ''],
  [
    'released after the later of the last group letting go and the drain’s end: median / p99 / max (s)',
    'loadBalancers.release.afterDrainAndLetGo.medianSeconds',
    '',
    '≤ 15',
  ],
  ['of them within 15 s (of those measured)', 'loadBalancers.release.afterDrainAndLetGo.within15Seconds', ''],
  [
    'the settle saw the last group let go after: median / p99 / max (s)',
    'loadBalancers.release.seenAfterLetGo.medianSeconds',
    '',
  ],
  ['released while a group still held the instance', 'loadBalancers.release.releasedWhileHeld', '', '0'],
  ['released at the maximum wait', 'loadBalancers.release.atMaximumWait', '', '0'],
  ['released at the fixed delay (the groups unread)', 'loadBalancers.release.atFallback', '', '0'],
];

/** The wave's numbers, this tree's beside the previous version's when it ran, with issue 40's targets. */
export function waveTable(w: Results): string {
  const p = w['previous'] as Results | undefined;
  const cell = (r: Results | undefined, key: string, unit = '') => {
    const v = key
      .split('.')
      .reduce<unknown>((x, k) => (typeof x === 'object' && x !== null ? (x as Results)[k] : undefined), r);
    return v === undefined ? '' : `${typeof v === 'number' ? String(v) : JSON.stringify(v)}${unit}`;
  };
  const lb = w['loadBalancers'] !== undefined;
  // Issue 40's targets: the wave's last completion no later than the previous version's in the same run.
  const budget = lb ? '' : p ? `≤ ${cell(p, 'lastCompletionSeconds', ' s')} (previous)` : '≤ previous';
  const rows: [string, string, string, string?][] = [
    ['Kubernetes requests per terminated node / a single drain’s', 'requestsPerNodeRatio', '', '≤ 1.3'],
    ['requests per terminated node (single drain)', 'requestsPerNode', ''],
    ['single drain: requests', 'singleDrain.requests', ''],
    ['response bytes per terminated node / a single drain’s', 'bytesPerNodeRatio', ''],
    ['response bytes per terminated node', 'bytesPerNode', ' B'],
    ['single drain: response bytes', 'singleDrain.responseBytes', ' B'],
    ['AWS calls per termination (every call, throttled ones included)', 'awsCallsPerTermination', '', '≤ 6'],
    ['AWS calls answered (not throttled) per termination', 'awsCallsAnsweredPerTermination', ''],
    ['AWS calls throttled', 'throttledCalls', '', ''],
    ['invocations (hand-offs, Lambda retries) / containers', 'invocations', ''],
    ['invocations failed', 'invocationsFailed', '', '0'],
    ['actions completed (of the wave)', 'actionsCompleted', ''],
    ['every action completed exactly once', 'actionsCompletedExactlyOnce', '', 'true'],
    ['evictions per original pod', 'evictionsPerOriginalPod', '', '1.00'],
    ['pods evicted twice', 'podsEvictedTwice', '', '0'],
    [
      "the wave's nodes all marked / the first eviction, from the first notification",
      'marking.markedSeconds.all',
      ' s',
    ],
    ['last completion, from the first notification', 'lastCompletionSeconds', ' s', budget],
    ['slowest termination, notification to completion', 'terminationSecondsMax', ' s'],
    ['peak drainer requests in flight (audit log)', 'peakRequestsInFlight', ''],
    ['APF 429s', 'throttled429', ''],
    ['probe p99 before → during (ms)', 'probe.p99BeforeMs', ''],
    ['probe p99 during / before', 'probeP99Ratio', ''],
    ['probe p99 in the API server (audit) before → during (ms)', 'probeServerP99Ms.before', ''],
    ...(lb ? targetGroupRows : []),
  ];
  const behind = lb ? `, behind ${String((w['loadBalancers'] as Results)['groups'])} target groups` : '';
  const lines = [
    `| wave: ${w['waveSize']} of ${w['nodes']} nodes, ${w['podsPerNode']} pods each${behind} | this tree | previous | target |`,
    '|---|---|---|---|',
  ];
  for (const [label, key, unit, target] of rows) {
    const extra = (r: Results | undefined) =>
      key === 'invocations'
        ? ` (${cell(r, 'handOffs')} hand-offs, ${cell(r, 'invocationsRetried')} retries) / ${cell(r, 'containers')}`
        : key === 'probe.p99BeforeMs'
          ? ` → ${cell(r, 'probe.p99DuringMs')}`
          : key === 'probeServerP99Ms.before'
            ? ` → ${cell(r, 'probeServerP99Ms.during')}`
            : key === 'loadBalancers.release.medianSeconds'
              ? ` / ${cell(r, 'loadBalancers.release.p99Seconds')} / ${cell(r, 'loadBalancers.release.maxSeconds')}`
              : key.endsWith('.medianSeconds')
                ? ` / ${cell(r, key.replace(/medianSeconds$/, 'p99Seconds'))} / ${cell(r, key.replace(/medianSeconds$/, 'maxSeconds'))}`
                : key === 'loadBalancers.release.afterDrainAndLetGo.within15Seconds'
                  ? ` of ${cell(r, 'loadBalancers.release.afterDrainAndLetGo.measured')}`
                  : key === 'marking.markedSeconds.all'
                    ? ` / ${cell(r, 'marking.firstEvictionSeconds', ' s')}`
                    : key === 'loadBalancers.controllerCallsByKind.reconcile'
                      ? ` + ${cell(r, 'loadBalancers.controllerCallsByKind.periodic')}`
                      : '';
    lines.push(
      `| ${label} | ${cell(w, key, unit)}${extra(w)} | ${p ? `${cell(p, key, unit)}${extra(p)}` : ''} | ${target ?? ''} |`,
    );
  }
  return lines.join('\n');
}
