// This version beside a previous one, measured by each version's own `bench/run.ts` in one
// session, one right after the other, on the same machine:
//   git worktree add /work/prev 84f950b && ln -s "$PWD/node_modules" /work/prev/node_modules
//   npx tsx bench/compare.ts --run --previous-tree /work/prev --sections drain,fleet
// runs this tree's bench (writing bench/results/latest.json), then the previous tree's (its
// plane binaries from this tree's cache, its results in bench/results/previous.json), each
// once no other kube-apiserver runs, and prints both side by side with their ratios. Without
// --run it only prints: npx tsx bench/compare.ts [--current a.json] [--previous b.json]
// Arguments after `--` go to both runs (smaller sizes while developing: -- --pods 20).
// The wave section runs once, in this tree's run, which drives both handlers itself (the
// previous tree's through --handler-tree; a previous run.ts has no wave section): its rows
// read the previous version from wave.previous when the previous results have no wave.
//   npx tsx bench/compare.ts --run --previous-tree /work/prev --sections drain,fleet,wave
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { waitForNoOtherPlane } from './machine.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    run: { type: 'boolean', default: false },
    'previous-tree': { type: 'string' },
    sections: { type: 'string', default: 'drain,fleet' },
    'fleet-nodes': { type: 'string', default: '2000' },
    current: { type: 'string', default: join(root, 'bench', 'results', 'latest.json') },
    previous: { type: 'string', default: join(root, 'bench', 'results', 'previous.json') },
    'wait-minutes': { type: 'string', default: '20' },
  },
});
const t0 = Date.now();
const say = (line: string) => console.log(`[compare ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${line}`);

function bench(cwd: string, args: string[], env: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(root, 'node_modules', '.bin', 'tsx'), ['bench/run.ts', ...args], {
      cwd,
      stdio: 'inherit',
      env: { ...process.env, ...env },
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`bench/run.ts in ${cwd} exited with ${code}`)),
    );
  });
}

function shortCommit(dir: string): string {
  return execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
}

type Results = Record<string, unknown>;

function load(path: string): Results {
  return JSON.parse(readFileSync(path, 'utf8')) as Results;
}

/** A number at a dotted path, or undefined. */
function at(r: Results, path: string): number | undefined {
  let v: unknown = r;
  for (const key of path.split('.'))
    v = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[key] : undefined;
  return typeof v === 'number' ? v : undefined;
}

interface Row {
  readonly label: (r: Results) => string;
  readonly path: string;
  readonly format: (n: number) => string;
}

const s2 = (n: number) => `${n.toFixed(2)} s`;
const count = (n: number) => String(n);
const two = (n: number) => n.toFixed(2);
const mib = (n: number) => `${n.toFixed(1)} MiB`;
const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
const ms = (n: number) => `${n.toFixed(0)} ms`;
/** A size the results record, for the row names. */
const size = (r: Results, path: string) => String(at(r, path) ?? '?');
const pods = (r: Results) => size(r, 'drain.pods');
const large = (r: Results) => size(r, 'fleet.lookup.large.nodes');
const small = (r: Results) => size(r, 'fleet.lookup.small.nodes');

const rows: readonly Row[] = [
  { label: (r) => `drain: ${pods(r)} pods, wall (ours)`, path: 'drain.oursSeconds', format: s2 },
  { label: () => 'drain: overhead (wall minus slowest pod), ours', path: 'drain.oursOverheadSeconds', format: s2 },
  {
    label: () => 'drain: overhead, kubectl drain (the same in both: the noise between runs)',
    path: 'drain.kubectlOverheadSeconds',
    format: s2,
  },
  { label: () => 'drain: overhead ratio ours/kubectl', path: 'drain.overheadRatio', format: two },
  { label: () => 'drain: API requests for the node (ours)', path: 'requestsPerNode.ours', format: count },
  { label: () => 'drain: API requests for the node (kubectl)', path: 'requestsPerNode.kubectl', format: count },
  {
    label: (r) =>
      `scale-in ${size(r, 'scaleIn.nodes')} x ${size(r, 'scaleIn.podsPerNode')} pods: until the last action completes`,
    path: 'scaleIn.seconds',
    format: s2,
  },
  { label: () => 'scale-in: peak requests in flight', path: 'scaleIn.peakRequestsInFlight', format: count },
  {
    label: (r) => `memory: peak RSS of a fresh process draining ${pods(r)} pods`,
    path: 'memory.maxRssMiB',
    format: mib,
  },
  { label: () => 'memory: empty node process', path: 'memory.emptyNodeMaxRssMiB', format: mib },
  { label: () => 'deployed asset (every chunk)', path: 'coldStart.assetBytes', format: kib },
  { label: () => 'cold start: bytes loaded', path: 'coldStart.bundleBytes', format: kib },
  {
    label: (r) => `cold start: import + construct, median of ${size(r, 'coldStart.runs')}`,
    path: 'coldStart.initMsMedian',
    format: ms,
  },
  { label: () => 'cold start: empty node, median', path: 'coldStart.emptyNodeMsMedian', format: ms },
  { label: () => 'cold start: above empty', path: 'coldStart.initAboveEmptyMs', format: ms },
  {
    label: (r) => `fleet: one termination, ${small(r)} nodes: requests`,
    path: 'fleet.lookup.small.requests',
    format: count,
  },
  {
    label: (r) => `fleet: one termination, ${large(r)} nodes: requests`,
    path: 'fleet.lookup.large.requests',
    format: count,
  },
  {
    label: (r) => `fleet: one termination, ${small(r)} nodes: response bytes`,
    path: 'fleet.lookup.small.responseBytes',
    format: kib,
  },
  {
    label: (r) => `fleet: one termination, ${large(r)} nodes: response bytes`,
    path: 'fleet.lookup.large.responseBytes',
    format: kib,
  },
  {
    label: (r) => `fleet: one termination, ${small(r)} nodes: peak RSS`,
    path: 'fleet.lookup.small.maxRssMiB',
    format: mib,
  },
  {
    label: (r) => `fleet: one termination, ${large(r)} nodes: peak RSS`,
    path: 'fleet.lookup.large.maxRssMiB',
    format: mib,
  },
  {
    label: () => 'fleet: an instance with no node (fallback scan): requests',
    path: 'fleet.lookup.missingNodeScan.requests',
    format: count,
  },
  {
    label: () => 'fleet: fallback scan: response bytes',
    path: 'fleet.lookup.missingNodeScan.responseBytes',
    format: kib,
  },
  {
    label: () => 'fleet: a launch whose node joins 30 s late: requests',
    path: 'fleet.launch.requestsPerLaunch',
    format: count,
  },
  { label: () => 'fleet: launch: response bytes', path: 'fleet.launch.responseBytes', format: kib },
  {
    label: () => 'fleet: scale-in 10 of 20, siblings cordoned: evictions per original pod',
    path: 'fleet.scaleIn.evictionsPerOriginalPod',
    format: two,
  },
  {
    label: () => 'fleet: scale-in, siblings cordoned: pods evicted twice',
    path: 'fleet.scaleIn.podsEvictedTwice',
    format: count,
  },
  {
    label: () => 'fleet: scale-in, siblings cordoned: until the last action',
    path: 'fleet.scaleIn.seconds',
    format: s2,
  },
  {
    label: () => 'fleet: scale-in, siblings cordoned: peak requests in flight',
    path: 'fleet.scaleIn.peakRequestsInFlight',
    format: count,
  },
  {
    label: () => 'fleet: scale-in without sibling cordoning: evictions per original pod',
    path: 'fleet.scaleInWithoutSiblingCordoning.evictionsPerOriginalPod',
    format: two,
  },
  {
    label: () => 'fleet: scale-in without: pods evicted twice',
    path: 'fleet.scaleInWithoutSiblingCordoning.podsEvictedTwice',
    format: count,
  },
  {
    label: () => 'fleet: scale-in without: until the last action',
    path: 'fleet.scaleInWithoutSiblingCordoning.seconds',
    format: s2,
  },
  {
    label: (r) =>
      `fleet: reconcile pass, ${size(r, 'fleet.reconcile.nothingMarked.large.nodes')} nodes, nothing marked: requests`,
    path: 'fleet.reconcile.nothingMarked.large.requests',
    format: count,
  },
  {
    label: () => 'fleet: reconcile pass, 10 stale drain marks: requests',
    path: 'fleet.reconcile.staleDrainMarks.requests',
    format: count,
  },
  {
    label: (r) =>
      `wave ${size(r, 'wave.waveSize')} of ${size(r, 'wave.nodes')}: requests per terminated node / a single drain's`,
    path: 'wave.requestsPerNodeRatio',
    format: two,
  },
  {
    label: () => "wave: response bytes per terminated node / a single drain's",
    path: 'wave.bytesPerNodeRatio',
    format: two,
  },
  { label: () => 'wave: AWS calls per termination', path: 'wave.awsCallsPerTermination', format: two },
  { label: () => 'wave: AWS calls throttled', path: 'wave.throttledCalls', format: count },
  { label: () => 'wave: invocations failed', path: 'wave.invocationsFailed', format: count },
  { label: () => 'wave: evictions per original pod', path: 'wave.evictionsPerOriginalPod', format: two },
  { label: () => 'wave: pods evicted twice', path: 'wave.podsEvictedTwice', format: count },
  { label: () => 'wave: last completion', path: 'wave.lastCompletionSeconds', format: s2 },
  { label: () => 'wave: peak drainer requests in flight', path: 'wave.peakRequestsInFlight', format: count },
  { label: () => 'wave: probe p99 during / before', path: 'wave.probeP99Ratio', format: two },
];

/** The previous version's wave, measured in this tree's run, where the previous results have none. */
function withPreviousWave(previous: Results, current: Results): Results {
  const wave = (current['wave'] as Results | undefined)?.['previous'];
  if (previous['wave'] !== undefined || wave === undefined) return previous;
  const w = wave as Results;
  return {
    label: `previous: ${String(w['handler'])}`,
    measuredAt: w['measuredAt'],
    commit: w['commit'],
    ...previous,
    wave,
  };
}

function comparison(current: Results, previous: Results): string {
  const name = (r: Results, fallback: string) =>
    [r['label'] ?? fallback, r['commit'] !== undefined ? `(${String(r['commit'])})` : ''].join(' ').trim();
  const lines = [
    `| measure | ${name(current, 'current')} | ${name(previous, 'previous')} | ratio |`,
    '|---|---|---|---|',
  ];
  for (const row of rows) {
    const c = at(current, row.path);
    const p = at(previous, row.path);
    if (c === undefined && p === undefined) continue;
    const ratio = c !== undefined && p !== undefined ? (p === 0 ? (c === 0 ? '1.00' : 'n/a') : (c / p).toFixed(2)) : '';
    lines.push(
      `| ${row.label(current)} | ${c === undefined ? '(not measured)' : row.format(c)} | ${p === undefined ? '(not measured)' : row.format(p)} | ${ratio} |`,
    );
  }
  lines.push('', `Measured at ${String(current['measuredAt'])} and ${String(previous['measuredAt'])}.`);
  return lines.join('\n');
}

// Last: the rows above are constants the comparison reads.
if (values.run) {
  const tree = values['previous-tree'];
  if (tree === undefined) throw new Error('--run needs --previous-tree <a worktree of the previous version>');
  const waitMinutes = Number(values['wait-minutes']);
  const args = ['--sections', values.sections!, '--fleet-nodes', values['fleet-nodes']!, ...positionals];
  const sections = values.sections!.split(',').map((x) => x.trim());
  // This tree's wave drives the previous handler too; the previous run.ts has no wave.
  const currentArgs = sections.includes('wave') ? [...args, '--handler-tree', tree] : args;
  const previousSections = sections.filter((x) => x !== 'wave');
  const previousArgs = [
    '--sections',
    previousSections.join(','),
    '--fleet-nodes',
    values['fleet-nodes']!,
    ...positionals,
  ];
  await waitForNoOtherPlane(say, waitMinutes);
  say(`this tree (${shortCommit(root)}): bench/run.ts ${args.join(' ')}`);
  await bench(
    root,
    [...currentArgs, '--label', 'current', '--wait-minutes', String(waitMinutes), '--out', values.current!],
    {},
  );
  if (previousSections.length > 0) {
    await waitForNoOtherPlane(say, waitMinutes);
    const commit = shortCommit(tree);
    say(`previous tree ${tree} (${commit}): bench/run.ts ${previousArgs.join(' ')}`);
    // Its plane binaries are this tree's (the same versions.env): no second build.
    await bench(tree, [...previousArgs, '--out', values.previous!], { PLANE_CACHE: join(root, '.cache', 'plane') });
    // Its run.ts may not know --label: the label is added to what it wrote.
    const written = JSON.parse(readFileSync(values.previous!, 'utf8')) as Record<string, unknown>;
    writeFileSync(values.previous!, JSON.stringify({ ...written, label: 'previous', commit }, null, 2) + '\n');
  }
}
const current = load(values.current!);
console.log(
  '\n' +
    comparison(current, withPreviousWave(existsSync(values.previous!) ? load(values.previous!) : {}, current)) +
    '\n',
);
