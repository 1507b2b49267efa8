// What the settle section (bench/settle.ts) keeps of one termination, and its table.

/** ELB's Describe bucket as issue 27 measured it: about 40 calls, refilled at 10 a second. */
export const bucket = { capacity: 40, refillPerSecond: 10 };

export type Handler = 'current' | 'previous';

export interface SettleRun {
  readonly size: 'small' | 'large';
  /** Under ELB's bucket: the stand-in refused (400 Throttling) what a 40/10 bucket would. */
  readonly throttled: boolean;
  readonly addedServices: number;
  readonly handler: Handler;
  readonly nodes: number;
  /** Services in the cluster when it ran, and the size of their list as JSON (before gzip). */
  readonly services: number;
  readonly servicesListBytes: number;
  readonly status: string;
  /** From the `node drained` log line to CompleteLifecycleAction; and after the later of the last target gone and the detach. */
  readonly settleSeconds: number;
  readonly afterLetGoSeconds: number;
  readonly elb: {
    calls: number;
    byAction: Record<string, number>;
    bytes: number;
    throttled: number;
    refusedByBucket: number;
  };
  readonly kubernetes: {
    settleRequests: number;
    settleRequestsByKind: Record<string, number>;
    settleBytes: number;
    settleBytesByKind: Record<string, number>;
    terminationRequests: number;
    terminationBytes: number;
  };
  /** What the handler said of the settle (its `settled` line) and its warnings. */
  readonly handlerSaid: { settledSecondsSinceDrain: unknown; loadBalancerCalls: unknown; warnings: string[] };
}

export function requestsByAction(calls: readonly { action: string }[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of calls) out[c.action] = (out[c.action] ?? 0) + 1;
  return out;
}

/** `GET /apis/storage.k8s.io/v1/volumeattachments/{name}`: the path without names or query, a watch marked. */
export function bytesByPath(
  answers: readonly { method: string; path: string; bytes: number }[],
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of answers) {
    const url = new URL(x.path, 'http://x');
    const kind = `${x.method} ${url.pathname.replace(/\/(volumeattachments|persistentvolumes)\/[^/]+/, '/$1/{name}').replace(/\/namespaces\/[^/]+/, '/namespaces/{ns}')}${url.searchParams.get('watch') ? ' (watch)' : ''}`;
    out[kind] = (out[kind] ?? 0) + x.bytes;
  }
  return out;
}

/**
 * Calls a token bucket of ELB's size would have refused, over the calls as they were made (the
 * stand-in does not throttle: the handler never saw a refusal, and a refused call, retried,
 * would have come later).
 */
export function refusedByBucket(atMs: readonly number[]): number {
  let tokens = bucket.capacity;
  let last = atMs[0] ?? 0;
  let refused = 0;
  for (const t of atMs) {
    tokens = Math.min(bucket.capacity, tokens + ((t - last) / 1000) * bucket.refillPerSecond);
    last = t;
    if (tokens >= 1) tokens -= 1;
    else refused++;
  }
  return refused;
}

/** The table `npm run bench` prints and docs/benchmarks.md keeps. */
export function settleTable(s: Record<string, unknown>): string {
  const runs = s['runs'] as SettleRun[];
  const head = runs.map(
    (r) =>
      `${r.handler === 'current' ? 'this tree' : 'previous'}, ${r.nodes} nodes${r.throttled ? ', ELB bucket 40/10' : ''}${r.addedServices ? `, ${r.services} Services` : ''}`,
  );
  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  const kinds = (m: Record<string, number>) =>
    Object.entries(m)
      .map(([k, v]) => `${v} ${k}`)
      .join(', ');
  const row = (label: string, f: (r: SettleRun) => string) => `| ${label} | ${runs.map(f).join(' | ')} |`;
  return [
    `| settle: one termination | ${head.join(' | ')} |`,
    `|---|${runs.map(() => '---|').join('')}`,
    row('ELB calls', (r) => `${r.elb.calls} (${kinds(r.elb.byAction)})`),
    row('ELB bytes answered', (r) => kib(r.elb.bytes)),
    row(
      'ELB calls refused by the bucket (throttled) / a 40/10 bucket would refuse',
      (r) => `${r.elb.throttled} / ${r.elb.refusedByBucket}`,
    ),
    row(
      'Kubernetes requests for the settle',
      (r) => `${r.kubernetes.settleRequests} (${kinds(r.kubernetes.settleRequestsByKind)})`,
    ),
    row('Kubernetes bytes for the settle', (r) => kib(r.kubernetes.settleBytes)),
    row('the Services list as JSON (before gzip)', (r) => `${r.services} Services, ${kib(r.servicesListBytes)}`),
    row(
      'the whole termination: requests / bytes',
      (r) => `${r.kubernetes.terminationRequests} / ${kib(r.kubernetes.terminationBytes)}`,
    ),
    row('settle, drained to released', (r) => `${r.settleSeconds.toFixed(1)} s`),
    row('handler warnings', (r) => r.handlerSaid.warnings.join('; ') || 'none'),
    row('released after the last target and volume let go', (r) => `${r.afterLetGoSeconds.toFixed(1)} s`),
    '',
    `Settle bytes, this tree, large / small cluster (no bucket, no Services added): ${String(s['bytesRatio'])} (ELB bytes ${String(s['elbBytesRatio'])}).` +
      (s['previousOverCurrent']
        ? ` Previous / this tree, large cluster: ${JSON.stringify(s['previousOverCurrent'])}.`
        : ''),
  ].join('\n');
}
