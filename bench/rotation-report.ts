// The rotation section's table (bench/rotation.ts): this tree's numbers beside the previous version's.
type Results = Record<string, unknown>;

const at = (r: Results | undefined, key: string): unknown =>
  key.split('.').reduce<unknown>((x, k) => (typeof x === 'object' && x !== null ? (x as Results)[k] : undefined), r);

const shown = (v: unknown) => (v === undefined ? '' : typeof v === 'number' ? String(v) : JSON.stringify(v));

/** Rejections by reason, or 0. */
const rejected = (v: unknown) => {
  const reasons = Object.entries((v ?? {}) as Record<string, number>);
  return reasons.length === 0 ? '0' : reasons.map(([reason, n]) => `${n} (${reason})`).join(', ');
};

const mib = (v: unknown) => (typeof v === 'number' ? `${(v / 1024).toFixed(1)} GiB` : '');

/** Rows: a label and the cell of one run. */
const rows: readonly [string, (r: Results) => string][] = [
  ['nodes rotated / in', (r) => `${shown(at(r, 'rotated'))} / ${shown(at(r, 'nodes'))}`],
  [
    'batches (percent of the group at a time)',
    (r) => `${shown(at(r, 'refresh.batches'))} (${shown(at(r, 'refresh.batchPercent'))} %)`,
  ],
  ['rotation, refresh start to last release', (r) => `${shown(at(r, 'rotationSeconds'))} s`],
  ['nodes per hour', (r) => shown(at(r, 'nodesPerHour'))],
  ['Kubernetes requests per node (the drainer’s, audit log)', (r) => shown(at(r, 'requestsPerNode'))],
  ['response bytes per node', (r) => `${shown(at(r, 'bytesPerNode'))} B`],
  [
    'AWS calls per node, every call (answered)',
    (r) => `${shown(at(r, 'awsCallsPerNode'))} (${shown(at(r, 'awsCallsAnsweredPerNode'))})`,
  ],
  ['AWS calls throttled', (r) => shown(at(r, 'throttledCalls'))],
  [
    'notification to release: median / p99 / max',
    (r) =>
      `${shown(at(r, 'releaseSeconds.median'))} / ${shown(at(r, 'releaseSeconds.p99'))} / ${shown(at(r, 'releaseSeconds.max'))} s`,
  ],
  [
    'evictions per original pod / pods evicted twice',
    (r) => `${shown(at(r, 'evictionsPerOriginalPod'))} / ${shown(at(r, 'podsEvictedTwice'))}`,
  ],
  [
    'invocations (failed, retried)',
    (r) =>
      `${shown(at(r, 'invocations'))} (${shown(at(r, 'invocationsFailed'))}, ${shown(at(r, 'invocationsRetried'))})`,
  ],
  ['APF 429s to the drainer', (r) => shown(at(r, 'throttled429'))],
  [
    'probe p99 before → during (its process; the API server’s)',
    (r) =>
      `${shown(at(r, 'probe.p99BeforeMs'))} → ${shown(at(r, 'probe.p99DuringMs'))} ms; ${shown(at(r, 'probeServerP99Ms.before'))} → ${shown(at(r, 'probeServerP99Ms.during'))} ms`,
  ],
  [
    'drainer’s priority level: nominal seats / limit (min-max)',
    (r) =>
      `${shown(at(r, 'flowControl.nominalLimitSeats'))} / ${shown(at(r, 'flowControl.currentLimitSeats.min'))}-${shown(at(r, 'flowControl.currentLimitSeats.max'))}`,
  ],
  [
    'its seats: peak executing (sampled) / peak demand (server) / time-averaged in use',
    (r) =>
      `${shown(at(r, 'flowControl.peakExecutingSeats'))} / ${shown(at(r, 'flowControl.peakDemandSeats'))} / ${shown(at(r, 'flowControl.averageSeatsInUse'))}`,
  ],
  [
    'its requests: dispatched / rejected / queue wait p99',
    (r) =>
      `${shown(at(r, 'flowControl.dispatchedRequests'))} / ${rejected(at(r, 'flowControl.rejectedRequests'))} / ${shown(at(r, 'flowControl.queueWaitP99Seconds'))} s`,
  ],
  [
    'peak memory: the bench and its plane (kube-apiserver, etcd)',
    (r) =>
      `${mib(at(r, 'memory.peakTotalMiB'))} of ${mib(at(r, 'memory.machineMiB'))} (${mib(at(r, 'memory.peakMiB.kube-apiserver'))}, ${mib(at(r, 'memory.peakMiB.etcd'))})`,
  ],
  [
    'another’s kube-apiserver beside ours: share of the run / most at once',
    (r) => `${shown(at(r, 'memory.otherPlanes.shareOfSamples'))} / ${shown(at(r, 'memory.otherPlanes.most'))}`,
  ],
];

export function rotationTable(r: Results): string {
  const p = r['previous'] as Results | undefined;
  return [
    `| rotation: ${shown(r['nodes'])} nodes, ${shown(r['podsPerNode'])} pods each | this tree | previous |`,
    '|---|---|---|',
    ...rows.map(([label, cell]) => `| ${label} | ${cell(r)} | ${p ? cell(p) : ''} |`),
  ].join('\n');
}
