// npm run bench: our handler beside `kubectl drain`, on the same local control plane, in
// one run. Writes bench/results/latest.json and prints a markdown table.
//   npm run bench -- --pods 110 --scale-nodes 20 --pods-per-scale-node 10 --cold-runs 20
//   npm run bench -- --sections drain,fleet --label current --out bench/results/current.json
//   npm run bench -- --sections wave --handler-tree /work/prev-main   (the wave, this tree's handler and that tree's)
//   npm run bench -- --sections wave --wave-target-groups 60 --handler-tree <dir>  (the same wave behind 60 target groups)
//   npm run bench -- --sections settle --handler-tree <checkout of 0b7823b>  (the settle at 20 and 2,000 nodes, both handlers)
//   npm run bench -- --sections rotation --handler-tree <dir>  (1,000 nodes rotated by an instance refresh, both handlers)
//   npm run bench -- --sections choice   (the termination policy: a decision at 20 and 2,000 nodes; a scale-in with it and without)
//   npm run bench -- --sections surge    (a one-replica Deployment under minAvailable 1: surge before evict against plain eviction)
//   npm run bench -- --sections repair --handler-tree <checkout of the previous version>  (a pass at 20, 2,000, 5,000 nodes, both bundles)
// Each plane starts only once no other kube-apiserver runs on the machine (--wait-minutes).
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { bundleLambda, coldStartBytes } from '../infra/bundling.js';
import {
  createDaemonSet,
  createDeployment,
  newInstanceId,
  readAudit,
  until,
  waitNodeReady,
  byDrainer,
} from '../test/cluster/kube.js';
import { startEnvironment, integerOption } from '../demo/environment.js';
import { measureColdStart } from './cold-start.js';
import { measurePackage } from './package-size.js';
import { waitForNoOtherPlane } from './machine.js';
import { measureDrainMemory } from './memory.js';
import { peakConcurrency, round, runFleet } from './fleet.js';
import type { ReconcilePass, StaleMarksPass } from './reconcile.js';
import { runUpgradeBench, type UpgradeRun } from './upgrade.js';
import { runSettleSection } from './settle.js';
import { choiceTable, runChoiceSection } from './choice.js';
import { settleTable } from './settle-report.js';
import { runWaveSection } from './wave.js';
import { waveTable } from './wave-report.js';
import { rotationTable } from './rotation-report.js';
import { runRotationSection } from './rotation.js';
import { repairTable, runRepairBench } from './repair.js';
import { requestsByKind } from './wire.js';
import { runSurgeBench, surgeTable } from './surge.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '110' },
    'scale-nodes': { type: 'string', default: '20' },
    'pods-per-scale-node': { type: 'string', default: '10' },
    'cold-runs': { type: 'string', default: '20' },
    'fleet-nodes': { type: 'string', default: '2000' },
    /** Comma-separated: drain (the single-node, memory, scale-in and cold-start measures), fleet, upgrade, wave, settle, repair. */
    sections: { type: 'string', default: 'drain,fleet,upgrade' },
    'wave-nodes': { type: 'string', default: '400' },
    'wave-size': { type: 'string', default: '200' },
    'wave-pods-per-node': { type: 'string', default: '5' },
    /** Auto Scaling's bucket in the wave, capacity/refill per second (AWS publishes none; see bench/wave.ts). */
    'wave-autoscaling-bucket': { type: 'string', default: '40/10' },
    /** The wave behind this many target groups, the Load Balancer Controller played (0: none, the wave as before). */
    'wave-target-groups': { type: 'string', default: '0' },
    /** Of those, the groups each node is registered in; their deregistration delays, min-max seconds. */
    'wave-groups-per-node': { type: 'string', default: '6' },
    'wave-deregistration-delays': { type: 'string', default: '5-60' },
    /** The controller reads each group about this often besides its reconciles (0: never). */
    'wave-controller-read-seconds': { type: 'string', default: '10' },
    /** The wave again with another tree's handler (its lambda/runtime.ts), written under wave.previous; the settle's drains beside this one's. */
    'handler-tree': { type: 'string' },
    /** The rotation: nodes replaced by an instance refresh, pods per node, and the batch (percent of the group). */
    'rotation-nodes': { type: 'string', default: '1000' },
    'rotation-pods-per-node': { type: 'string', default: '5' },
    'rotation-batch-percent': { type: 'string', default: '10' },
    /** After the Started event and each batch, where the pods moved so far went (old nodes or new). */
    'rotation-census': { type: 'boolean', default: false },
    /** The settle section's cluster sizes (small,large) and the large one's VolumeAttachments of other nodes. */
    'settle-nodes': { type: 'string', default: '20,2000' },
    'settle-attachments': { type: 'string', default: '5000' },
    /** Then this many other teams' Services in the large cluster, and one more drain by this tree's handler (0: not). */
    'settle-services': { type: 'string', default: '2000' },
    out: { type: 'string', default: join(root, 'bench', 'results', 'latest.json') },
    /** Names the run in its results (`label`), for comparing versions (bench/compare.ts). */
    label: { type: 'string' },
    /** How long each plane waits for another kube-apiserver on this machine to go (0: not at all). */
    'wait-minutes': { type: 'string', default: '20' },
    /** The surge section: runs of each drain, and the plain drain's deadline (its budget holds it that long). */
    'surge-runs': { type: 'string', default: '3' },
    'surge-drain-timeout': { type: 'string', default: '30' },
    /** The repair section's cluster sizes; two bad and the storm run at the largest. */
    'repair-nodes': { type: 'string', default: '20,2000,5000' },
    /** The function's memory setting the repair passes run under (Lambda's V8 flags for it). */
    'lambda-memory': { type: 'string', default: '256' },
  },
});
const pods = integerOption('pods', values.pods, 5);
const scaleNodes = integerOption('scale-nodes', values['scale-nodes'], 1);
const podsPerScaleNode = integerOption('pods-per-scale-node', values['pods-per-scale-node'], 1);
const coldRuns = integerOption('cold-runs', values['cold-runs'], 3);
const fleetNodes = integerOption('fleet-nodes', values['fleet-nodes'], 20);
const waitMinutes = integerOption('wait-minutes', values['wait-minutes'], 0);
const waveNodes = integerOption('wave-nodes', values['wave-nodes'], 4);
const waveSize = integerOption('wave-size', values['wave-size'], 1);
const wavePodsPerNode = integerOption('wave-pods-per-node', values['wave-pods-per-node'], 1);
const [waveAsCapacity, waveAsRefill] = (values['wave-autoscaling-bucket'] ?? '')
  .split('/')
  .map((x, i) => integerOption(`wave-autoscaling-bucket (${i === 0 ? 'capacity' : 'refill'})`, x, 1));
if (waveAsCapacity === undefined || waveAsRefill === undefined)
  throw new Error(
    `--wave-autoscaling-bucket ${values['wave-autoscaling-bucket']} is invalid: expected capacity/refill, e.g. 40/10`,
  );
const waveTargetGroups = integerOption('wave-target-groups', values['wave-target-groups'], 0);
const [delayLow, delayHigh] = (values['wave-deregistration-delays'] ?? '')
  .split('-')
  .map((x, i) => integerOption(`wave-deregistration-delays (${i === 0 ? 'min' : 'max'})`, x, 0));
if (delayLow === undefined || delayHigh === undefined || delayHigh < delayLow)
  throw new Error(
    `--wave-deregistration-delays ${values['wave-deregistration-delays']} is invalid: expected min-max seconds, e.g. 5-60`,
  );
const targetGroups = {
  groups: waveTargetGroups,
  groupsPerNode: integerOption('wave-groups-per-node', values['wave-groups-per-node'], 1),
  delaySeconds: [delayLow, delayHigh] as const,
  controllerReadSeconds: integerOption('wave-controller-read-seconds', values['wave-controller-read-seconds'], 0),
};
if (waveTargetGroups > 0 && targetGroups.groupsPerNode > waveTargetGroups)
  throw new Error(
    `--wave-groups-per-node ${targetGroups.groupsPerNode} is invalid: more than the ${waveTargetGroups} target groups`,
  );
const [settleSmall, settleLarge] = (values['settle-nodes'] ?? '')
  .split(',')
  .map((x, i) => integerOption(`settle-nodes (${i === 0 ? 'small' : 'large'})`, x, 4));
if (settleSmall === undefined || settleLarge === undefined || settleLarge < settleSmall)
  throw new Error(`--settle-nodes ${values['settle-nodes']} is invalid: expected small,large, e.g. 20,2000`);
const settleAttachments = integerOption('settle-attachments', values['settle-attachments'], 0);
const settleServices = integerOption('settle-services', values['settle-services'], 0);
const asked = new Set(values.sections!.split(',').map((x) => x.trim()));
for (const section of asked)
  if (
    !['drain', 'fleet', 'upgrade', 'wave', 'rotation', 'settle', 'choice', 'package', 'repair', 'surge'].includes(
      section,
    )
  )
    throw new Error(
      `--sections ${values.sections} is invalid: expected drain, fleet, upgrade, wave, rotation, settle, choice, repair, surge and/or package`,
    );
// The wave behind target groups is kept under a key of its own (waveTargetGroups), beside the plain wave's.
const sections = new Set([...asked].map((s) => (s === 'wave' && waveTargetGroups > 0 ? 'wave-target-groups' : s)));

// Pods shut down in 1 to 5 s (kwok deletes each this long after its deletion starts).
const shutdownDelaysSeconds = [1, 2, 3, 4, 5];
const slowestShutdownSeconds = Math.max(...shutdownDelaysSeconds);

const t0 = Date.now();
const say = (line: string) => console.log(`[bench ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${line}`);
const run = promisify(execFile);

const versions = Object.fromEntries(
  readFileSync(join(root, 'test', 'cluster', 'plane', 'versions.env'), 'utf8')
    .split('\n')
    .filter((l) => /^[A-Z_]+=/.test(l))
    .map((l) => l.split('=') as [string, string]),
);
const idle = () => waitForNoOtherPlane(say, waitMinutes);
const drain = sections.has('drain') ? await idle().then(runDrain) : undefined;
// The fleet section runs on a plane of its own, after the first one stopped (2 cores).
if ((sections.has('fleet') || sections.has('repair')) && !drain) bundleLambda(join(root, 'dist', 'lambda'));
const fleet = sections.has('fleet')
  ? await idle().then(() =>
      runFleet({ say, bundlePath: join(root, 'dist', 'lambda', 'index.mjs'), largeNodes: fleetNodes }),
    )
  : undefined;
const upgrade = sections.has('upgrade') ? await idle().then(() => runUpgradeBench(say)) : undefined;
// Node auto repair's decision cost per pass at fleet size.
const repair = sections.has('repair')
  ? await idle().then(() =>
      runRepairBench({
        say,
        bundlePath: join(root, 'dist', 'lambda', 'index.mjs'),
        ...(values['handler-tree']
          ? {
              previousBundlePath: bundleTree(values['handler-tree']),
              previousCommit: commitOf(values['handler-tree']),
            }
          : {}),
        sizes: (values['repair-nodes'] ?? '').split(',').map((x) => integerOption('repair-nodes', x, 1)),
        lambdaMemoryMiB: integerOption('lambda-memory', values['lambda-memory'], 128),
      }),
    )
  : undefined;
const wave = asked.has('wave')
  ? await idle().then(() =>
      runWaveSection({
        say,
        nodes: waveNodes,
        waveSize,
        podsPerNode: wavePodsPerNode,
        autoScalingBucket: { capacity: waveAsCapacity, refillPerSecond: waveAsRefill },
        targetGroups,
        handlerTree: values['handler-tree'],
        beforeEachPlane: idle,
      }).then((w) => ({
        ...w,
        commit: commitOf(root),
      })),
    )
  : undefined;
const rotation = sections.has('rotation')
  ? await idle().then(() =>
      runRotationSection({
        say,
        nodes: integerOption('rotation-nodes', values['rotation-nodes'], 2),
        podsPerNode: integerOption('rotation-pods-per-node', values['rotation-pods-per-node'], 1),
        batchPercent: integerOption('rotation-batch-percent', values['rotation-batch-percent'], 1),
        census: values['rotation-census'],
        autoScalingBucket: { capacity: waveAsCapacity, refillPerSecond: waveAsRefill },
        handlerTree: values['handler-tree'],
        beforeEachPlane: idle,
      }).then((r) => ({ ...r, commit: commitOf(root) })),
    )
  : undefined;
const settle = sections.has('settle')
  ? await idle().then(() =>
      runSettleSection({
        say,
        smallNodes: settleSmall,
        largeNodes: settleLarge,
        attachments: settleAttachments,
        services: settleServices,
        handlerTree: values['handler-tree'],
      }).then((s) => ({
        measuredAt: new Date().toISOString(),
        ...s,
        commit: commitOf(root),
        ...(values['handler-tree'] ? { previousCommit: commitOf(values['handler-tree']) } : {}),
      })),
    )
  : undefined;
const choice = sections.has('choice')
  ? await idle().then(() =>
      runChoiceSection({ say, smallNodes: settleSmall, largeNodes: settleLarge }).then((c) => ({
        ...c,
        commit: commitOf(root),
      })),
    )
  : undefined;
const surge = sections.has('surge')
  ? await idle().then(() =>
      runSurgeBench({
        say,
        runs: integerOption('surge-runs', values['surge-runs'], 1),
        drainTimeoutSeconds: integerOption('surge-drain-timeout', values['surge-drain-timeout'], 10),
      }),
    )
  : undefined;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
// The installable package (no plane): its sizes and its asset's cold start.
const packaged = sections.has('package') ? { package: measurePackage(root, say, coldRuns) } : undefined;
// The sections not run now stay as the file had them, each with the time, label and commit it
// was measured at (measuredBy); the top-level ones are this run's.
const kept = keptSections(values.out!, sections);
const thisRun = { measuredAt: new Date().toISOString(), label: values.label, commit: commitOf(root) };
const output = {
  ...thisRun,
  sections: [...new Set([...kept.sections, ...sections])],
  measuredBy: { ...kept.measuredBy, ...Object.fromEntries([...sections].map((s) => [s, thisRun])) },
  machine: {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: process.platform,
  },
  versions: {
    kubernetes: versions['KUBERNETES_VERSION'],
    etcd: versions['ETCD_VERSION'],
    kwok: versions['KWOK_VERSION'],
  },
  ...kept.results,
  ...drain,
  ...(fleet ? { fleet } : {}),
  ...(upgrade ? { upgrade } : {}),
  ...(wave ? (waveTargetGroups > 0 ? { waveTargetGroups: wave } : { wave }) : {}),
  ...(rotation ? { rotation } : {}),
  ...(settle ? { settle } : {}),
  ...(choice ? { choice } : {}),
  ...(repair ? { repair } : {}),
  ...(surge ? { surge } : {}),
  ...packaged,
};
mkdirSync(dirname(values.out!), { recursive: true });
writeFileSync(values.out!, JSON.stringify(output, null, 2) + '\n');
if (drain) console.log('\n' + table(output as Parameters<typeof table>[0]) + '\n');
if (fleet) console.log('\n' + fleetTable(fleet as Parameters<typeof fleetTable>[0]) + '\n');
if (upgrade) console.log('\n' + upgradeTable(upgrade as Parameters<typeof upgradeTable>[0]) + '\n');
if (wave) console.log('\n' + waveTable(wave) + '\n');
if (rotation) console.log('\n' + rotationTable(rotation) + '\n');
if (settle) console.log('\n' + settleTable(settle) + '\n');
if (choice) console.log('\n' + choiceTable(choice as unknown as Parameters<typeof choiceTable>[0]) + '\n');
if (repair) console.log('\n' + repairTable(repair) + '\n');
if (surge) console.log('\n' + surgeTable(surge) + '\n');
if (packaged)
  console.log(
    `\npackage: npm tarball ${kib(packaged.package.tarballBytes)}, Python wheel ${kib(packaged.package.wheelBytes)}, asset ${kib(packaged.package.assetBytes)}; entry file ${kib(packaged.package.coldStart.bytes)}, +${packaged.package.coldStart.initAboveEmptyMs} ms over an empty node (median of ${packaged.package.coldStart.runs})\n`,
  );
say(`written to ${values.out}`);

/** Another tree's handler bundled by that tree's own bundling, in its dist/lambda: the bundle's path. */
function bundleTree(tree: string): string {
  say(`bundling the handler of ${tree}`);
  const code = "import { bundleLambda } from './infra/bundling.ts'; bundleLambda('dist/lambda');";
  execFileSync(join(root, 'node_modules', '.bin', 'tsx'), ['--eval', code], { cwd: tree, stdio: 'inherit' });
  return join(tree, 'dist', 'lambda', 'index.mjs');
}

/** The single-node drain beside kubectl, memory, the 20-node scale-in and the cold start. */
async function runDrain() {
  // --- d: cold start, first: with the control plane running, its controllers would take CPU
  // from the fresh processes and inflate the numbers.
  say(`cold start: bundling and timing ${coldRuns} fresh processes (interleaved with empty ones)`);
  const outdir = join(root, 'dist', 'lambda');
  const metafile = bundleLambda(outdir);
  const cold = measureColdStart(join(outdir, 'index.mjs'), coldRuns);
  const bundleBytes = coldStartBytes(metafile, 'index.mjs').bytes;
  const assetBytes = Object.values(metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  say(`cold start: median ${cold.initMsMedian.toFixed(0)} ms, empty node ${cold.emptyNodeMsMedian.toFixed(0)} ms`);

  const env = await startEnvironment({
    log: say,
    loadBalancerDelaySeconds: 0,
    drainTimeoutSeconds: 600,
    auditUsers: ['plane-admin'],
  });
  const drainedAt = new Map<string, number>();
  env.onHandlerLog((log) => {
    if (log['message'] === 'node drained' && typeof log['node'] === 'string')
      drainedAt.set(log['node'], Date.parse(String(log['timestamp'])));
  });

  try {
    const a = env.admin;
    await createDaemonSet(a, 'kube-system', 'aws-node');
    await createDaemonSet(a, 'kube-system', 'kube-proxy');

    /** A node with `count` pods from five Deployments whose pods take 1..5 s to shut down. */
    const fillNode = async (node: string, count: number, pool: string) => {
      const per = Math.ceil(count / shutdownDelaysSeconds.length);
      let left = count;
      for (const delay of shutdownDelaysSeconds) {
        const replicas = Math.min(per, left);
        left -= replicas;
        if (replicas > 0)
          await createDeployment(a, 'default', `${node}-${delay}s`, replicas, {
            nodeSelector: { 'bench-pool': pool },
            deleteDelay: `${delay}s`,
          });
      }
    };
    const runningOn = async (node: string) =>
      (
        await a.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node},status.phase=Running` })
      ).items.filter((p) => p.metadata?.namespace === 'default').length;

    // --- a and b: one node, ours vs kubectl drain
    const oursNode = { name: 'bench-ours', instanceId: newInstanceId() };
    const kubectlNode = { name: 'bench-kubectl', instanceId: newInstanceId() };
    for (const n of [oursNode, kubectlNode]) {
      await env.addNode(n.name, n.instanceId, { 'bench-pool': n.name });
      await waitNodeReady(a, n.name);
      await fillNode(n.name, pods, n.name);
      say(`${n.name}: waiting for ${pods} pods to run`);
      await until(`${pods} pods Running on ${n.name}`, 180_000, async () => (await runningOn(n.name)) === pods, 500);
    }

    say(`draining ${oursNode.name} (${pods} pods) with our handler`);
    const oursStart = Date.now();
    const ours = await env.terminate(oursNode.instanceId);
    const oursEnd = drainedAt.get(oursNode.name);
    if (oursEnd === undefined)
      throw new Error(`our handler did not drain ${oursNode.name}: ${JSON.stringify(ours.result)}`);
    const oursSeconds = (oursEnd - ours.notifiedMs) / 1000;
    const oursRequests = readAudit(env.plane, (e) => byDrainer(e) && e.atMs >= oursStart - 50);
    say(`ours: drained in ${oursSeconds.toFixed(2)} s with ${oursRequests.length} API requests`);

    say(
      `draining ${kubectlNode.name} (${pods} pods) with kubectl drain --ignore-daemonsets --delete-emptydir-data --force`,
    );
    const kubectlStart = Date.now();
    await run(
      env.plane.kubectl,
      [
        '--kubeconfig',
        env.plane.adminKubeconfig,
        'drain',
        kubectlNode.name,
        '--ignore-daemonsets',
        '--delete-emptydir-data',
        '--force',
        '--timeout=10m',
      ],
      {
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    const kubectlSeconds = (Date.now() - kubectlStart) / 1000;
    const kubectlRequests = readAudit(
      env.plane,
      (e) => e.userAgent.startsWith('kubectl') && e.atMs >= kubectlStart - 50 && e.receivedMs >= kubectlStart - 50,
    );
    say(`kubectl: drained in ${kubectlSeconds.toFixed(2)} s with ${kubectlRequests.length} API requests`);

    // Their replacements cannot schedule (the pools are cordoned); remove them so they do not
    // load the scheduler during the next measurement.
    const removeWorkloads = (node: string) =>
      a.kubectl(
        'delete',
        'deployment',
        '-n',
        'default',
        ...shutdownDelaysSeconds.map((d) => `${node}-${d}s`),
        '--ignore-not-found',
        '--wait=false',
      );
    for (const n of [oursNode, kubectlNode]) removeWorkloads(n.name);

    // --- e: memory, the same drain run by the deployed bundle in a fresh process
    const memoryNode = { name: 'bench-memory', instanceId: newInstanceId() };
    await env.addNode(memoryNode.name, memoryNode.instanceId, { 'bench-pool': memoryNode.name });
    await waitNodeReady(a, memoryNode.name);
    await fillNode(memoryNode.name, pods, memoryNode.name);
    await until(
      `${pods} pods Running on ${memoryNode.name}`,
      180_000,
      async () => (await runningOn(memoryNode.name)) === pods,
      500,
    );
    say(`memory: draining ${memoryNode.name} (${pods} pods) with the bundle in a fresh process`);
    // Without the loaders tsx puts in NODE_OPTIONS for this process: the Lambda runtime has none.
    const { NODE_OPTIONS: _loaders, ...bundleEnvironment } = env.handlerEnvironment;
    const memory = await measureDrainMemory(
      join(outdir, 'index.mjs'),
      bundleEnvironment,
      env.notify(memoryNode.instanceId).event,
    );
    const memoryStatus = (memory.result as { records?: { status?: string }[] }).records?.[0]?.status;
    if (memoryStatus !== 'drained')
      throw new Error(`memory: the bundled handler did not drain ${memoryNode.name}: ${JSON.stringify(memory.result)}`);
    say(
      `memory: peak RSS ${memory.maxRssMiB} MiB, heap ${memory.heapUsedMiB} MiB (empty node: ${memory.emptyNodeMaxRssMiB} MiB)`,
    );
    removeWorkloads(memoryNode.name);

    // --- c: a scale-in of many nodes at once
    // The instances drained above have terminated by now, as in AWS a minute after CONTINUE:
    // Auto Scaling forgets them and their nodes go. Left in Terminating:Proceed (where the
    // stand-in keeps them), every drain of the scale-in would find them among the group's
    // leaving instances.
    for (const n of [oursNode, memoryNode]) {
      env.aws.instances.delete(n.instanceId);
      await a.core.deleteNode({ name: n.name });
    }
    say(`scale-in: ${scaleNodes} nodes with ${podsPerScaleNode} pods each`);
    const scale = Array.from({ length: scaleNodes }, (_, i) => ({
      name: `bench-scale-${i + 1}`,
      instanceId: newInstanceId(),
    }));
    for (const n of scale) await env.addNode(n.name, n.instanceId, { 'bench-pool': n.name });
    for (const n of scale) await waitNodeReady(a, n.name);
    for (const n of scale) await fillNode(n.name, podsPerScaleNode, n.name);
    await until(
      `${scaleNodes * podsPerScaleNode} pods Running on the scale-in nodes`,
      300_000,
      async () => {
        const counts = await Promise.all(scale.map((n) => runningOn(n.name)));
        return counts.every((c) => c === podsPerScaleNode);
      },
      1000,
    );
    const scaleStart = Date.now();
    const completionsBefore = env.aws.calls.length;
    await Promise.all(scale.map((n) => env.terminate(n.instanceId)));
    const completions = env.aws.calls
      .slice(completionsBefore)
      .filter((c) => c.action === 'CompleteLifecycleAction' && c.outcome === 'ok');
    if (completions.length !== scaleNodes)
      throw new Error(`scale-in: ${completions.length} of ${scaleNodes} lifecycle actions completed`);
    const scaleSeconds = (Math.max(...completions.map((c) => c.atMs)) - scaleStart) / 1000;
    const scaleRequests = readAudit(env.plane, (e) => byDrainer(e) && e.receivedMs >= scaleStart - 50);
    const peakInFlight = peakConcurrency(scaleRequests.filter((e) => e.verb !== 'watch'));
    say(`scale-in: last action completed after ${scaleSeconds.toFixed(2)} s; peak ${peakInFlight} requests in flight`);

    const overhead = (seconds: number) => Math.max(0, seconds - slowestShutdownSeconds);
    const result = {
      drain: {
        pods,
        slowestShutdownSeconds,
        oursSeconds: round(oursSeconds),
        kubectlSeconds: round(kubectlSeconds),
        oursOverheadSeconds: round(overhead(oursSeconds)),
        kubectlOverheadSeconds: round(overhead(kubectlSeconds)),
        overheadRatio: round(overhead(oursSeconds) / Math.max(0.001, overhead(kubectlSeconds))),
      },
      requestsPerNode: {
        ours: oursRequests.length,
        kubectl: kubectlRequests.length,
        oursByKind: requestsByKind(oursRequests),
        kubectlByKind: requestsByKind(kubectlRequests),
      },
      scaleIn: {
        nodes: scaleNodes,
        podsPerNode: podsPerScaleNode,
        seconds: round(scaleSeconds),
        peakRequestsInFlight: peakInFlight,
      },
      memory: {
        pods,
        maxRssMiB: memory.maxRssMiB,
        heapUsedMiB: memory.heapUsedMiB,
        emptyNodeMaxRssMiB: memory.emptyNodeMaxRssMiB,
      },
      coldStart: {
        bundleBytes,
        assetBytes,
        initMsMedian: round(cold.initMsMedian),
        emptyNodeMsMedian: round(cold.emptyNodeMsMedian),
        initAboveEmptyMs: round(cold.initMsMedian - cold.emptyNodeMsMedian),
        runs: cold.runs,
      },
    };
    return result;
  } finally {
    await env.stop();
    say('control plane stopped');
  }
}

/**
 * What `out` holds of the sections not run now (`results`), with the measuredAt, label and
 * commit each was measured at (`measuredBy`: the file's own, or, in a file written before it
 * had one, the file's top-level ones); nothing when every section it has is run again.
 */
function keptSections(
  out: string,
  run: ReadonlySet<string>,
): { measuredBy: Record<string, unknown>; sections: string[]; results: Record<string, unknown> } {
  let existing: Record<string, unknown>;
  try {
    existing = JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>;
  } catch {
    return { measuredBy: {}, sections: [], results: {} };
  }
  const keys: Record<string, readonly string[]> = {
    drain: ['drain', 'requestsPerNode', 'scaleIn', 'memory', 'coldStart'],
    fleet: ['fleet'],
    upgrade: ['upgrade'],
    wave: ['wave'],
    'wave-target-groups': ['waveTargetGroups'],
    rotation: ['rotation'],
    settle: ['settle'],
    choice: ['choice'],
    repair: ['repair'],
    package: ['package'],
  };
  const left = ((existing['sections'] as string[] | undefined) ?? []).filter((s) => !run.has(s));
  if (left.length === 0) return { measuredBy: {}, sections: [], results: {} };
  const results: Record<string, unknown> = {};
  for (const s of left) for (const k of keys[s] ?? []) if (existing[k] !== undefined) results[k] = existing[k];
  const file = { measuredAt: existing['measuredAt'], label: existing['label'], commit: existing['commit'] };
  const by = (existing['measuredBy'] ?? {}) as Record<string, unknown>;
  return { measuredBy: Object.fromEntries(left.map((s) => [s, by[s] ?? file])), sections: left, results };
}

/** The commit measured, `+dirty` when the tree has changes. */
function commitOf(dir: string): string | undefined {
  try {
    const git = (...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).trim();
    return `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--', '.', ':!node_modules') ? '+dirty' : ''}`;
  } catch {
    return undefined;
  }
}

function upgradeTable(u: { runs: UpgradeRun[] }): string {
  return [
    `| upgrade: 6 nodes, 24 replicas spread over them, budgets minAvailable 4 of 6, one instance at a time | evictions per pod | pods moved twice or more | wall |`,
    `|---|---|---|---|`,
    ...u.runs.map(
      (r) =>
        `| strategy ${r.strategy}, outdated nodes ${r.marking ? 'marked' : 'not marked'} | ${r.evictionsPerPod.toFixed(2)} | ${r.podsMovedTwiceOrMore} | ${r.seconds.toFixed(1)} s |`,
    ),
  ].join('\n');
}

function fleetTable(f: {
  nodeJsonBytes: number;
  lookup: {
    small: { nodes: number; requests: number; responseBytes: number; maxRssMiB: number };
    large: { nodes: number; requests: number; responseBytes: number; maxRssMiB: number };
    bytesRatio: number;
    missingNodeScan: { requests: number; responseBytes: number };
  };
  launch: { requestsPerLaunch: number; nodeJoinsAfterSeconds: number; responseBytes: number };
  scaleIn: {
    evictionsPerOriginalPod: number;
    podsEvictedTwice: number;
    seconds: number;
    peakRequestsInFlight: number;
    throttled429: number;
  };
  scaleInWithoutSiblingCordoning: {
    evictionsPerOriginalPod: number;
    podsEvictedTwice: number;
    seconds: number;
    peakRequestsInFlight: number;
    throttled429: number;
  };
  memory: { ratio: number };
  reconcile?: { nothingMarked: { small: ReconcilePass; large: ReconcilePass }; staleDrainMarks: StaleMarksPass };
}): string {
  const s = f.lookup.small;
  const l = f.lookup.large;
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  const on = f.scaleIn;
  const off = f.scaleInWithoutSiblingCordoning;
  return [
    `| fleet measure | ${s.nodes} nodes | ${l.nodes} nodes |`,
    `|---|---|---|`,
    `| one termination (5 pods): API requests | ${s.requests} | ${l.requests} |`,
    `| one termination: response bytes on the wire | ${kb(s.responseBytes)} | ${kb(l.responseBytes)} (ratio ${f.lookup.bytesRatio.toFixed(2)}) |`,
    `| one termination: peak RSS of the bundle in a fresh process | ${s.maxRssMiB.toFixed(1)} MiB | ${l.maxRssMiB.toFixed(1)} MiB (ratio ${f.memory.ratio.toFixed(2)}) |`,
    `| an instance with no node (the fallback scan) | | ${f.lookup.missingNodeScan.requests} requests, ${kb(f.lookup.missingNodeScan.responseBytes)} |`,
    `| a launch whose node joins ${f.launch.nodeJoinsAfterSeconds} s late: requests | | ${f.launch.requestsPerLaunch} (${kb(f.launch.responseBytes)}) |`,
    '',
    `| scale-in: 10 of 20 nodes, 50 replicas, notifications 0-2 s apart | siblings cordoned first | without |`,
    `|---|---|---|`,
    `| evictions per original pod | ${on.evictionsPerOriginalPod.toFixed(2)} | ${off.evictionsPerOriginalPod.toFixed(2)} |`,
    `| pods evicted twice (replacements that landed on a doomed node) | ${on.podsEvictedTwice} | ${off.podsEvictedTwice} |`,
    `| until the last action completed | ${on.seconds.toFixed(1)} s | ${off.seconds.toFixed(1)} s |`,
    `| peak requests in flight / 429s | ${on.peakRequestsInFlight} / ${on.throttled429} | ${off.peakRequestsInFlight} / ${off.throttled429} |`,
    ...(f.reconcile ? ['', reconcileTable(f.reconcile)] : []),
    '',
    `A stand-in node is ${f.nodeJsonBytes} bytes of JSON (with managedFields).`,
  ].join('\n');
}

function reconcileTable(r: {
  nothingMarked: { small: ReconcilePass; large: ReconcilePass };
  staleDrainMarks: StaleMarksPass;
}): string {
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  const s = r.nothingMarked.small;
  const l = r.nothingMarked.large;
  const st = r.staleDrainMarks;
  const kinds = (p: ReconcilePass, of: 'requestsByKind' | 'awsCallsByAction') =>
    Object.entries(p[of])
      .map(([k, n]) => `${n} ${k}`)
      .join(', ');
  return [
    `| one reconcile pass (the bundle in a fresh process) | ${s.nodes} nodes, nothing marked | ${l.nodes} nodes, nothing marked | ${st.nodes} nodes, ${st.staleMarks} stale drain marks |`,
    `|---|---|---|---|`,
    `| API requests | ${s.requests} (${kinds(s, 'requestsByKind')}) | ${l.requests} (${kinds(l, 'requestsByKind')}) | ${st.requests} (${kinds(st, 'requestsByKind')}) |`,
    `| response bytes on the wire | ${kb(s.responseBytes)} | ${kb(l.responseBytes)} | ${kb(st.responseBytes)} |`,
    `| AWS calls (DescribeCluster included: a fresh process connects) | ${s.awsCalls} (${kinds(s, 'awsCallsByAction')}) | ${l.awsCalls} (${kinds(l, 'awsCallsByAction')}) | ${st.awsCalls} (${kinds(st, 'awsCallsByAction')}) |`,
    `| marked nodes found / marks taken back | ${s.markedNodes} / ${s.drainMarksRemoved} | ${l.markedNodes} / ${l.drainMarksRemoved} | ${st.markedNodes} / ${st.drainMarksRemoved} (${st.drainMarksRemovedEvents} DrainMarksRemoved Events; ${st.unmarkedAfter} of ${st.staleMarks} nodes unmarked after) |`,
    `| the pass (its own timing) / peak RSS | ${s.passMs ?? '?'} ms / ${s.maxRssMiB.toFixed(1)} MiB | ${l.passMs ?? '?'} ms / ${l.maxRssMiB.toFixed(1)} MiB | ${st.passMs ?? '?'} ms / ${st.maxRssMiB.toFixed(1)} MiB |`,
  ].join('\n');
}

function table(r: {
  machine: { cpu: string; cores: number; memoryGiB: number; node: string };
  versions: Record<string, string | undefined>;
  drain: {
    pods: number;
    oursSeconds: number;
    kubectlSeconds: number;
    oursOverheadSeconds: number;
    kubectlOverheadSeconds: number;
    overheadRatio: number;
    slowestShutdownSeconds: number;
  };
  requestsPerNode: { ours: number; kubectl: number };
  scaleIn: { nodes: number; podsPerNode: number; seconds: number; peakRequestsInFlight: number };
  memory: { pods: number; maxRssMiB: number; heapUsedMiB: number; emptyNodeMaxRssMiB: number };
  coldStart: {
    bundleBytes: number;
    assetBytes: number;
    initMsMedian: number;
    emptyNodeMsMedian: number;
    initAboveEmptyMs: number;
    runs: number;
  };
}): string {
  const d = r.drain;
  return [
    `| measure | ours | kubectl drain |`,
    `|---|---|---|`,
    `| drain ${d.pods} pods (slowest shuts down in ${d.slowestShutdownSeconds} s), wall | ${d.oursSeconds.toFixed(2)} s | ${d.kubectlSeconds.toFixed(2)} s |`,
    `| overhead (wall minus slowest pod) | ${d.oursOverheadSeconds.toFixed(2)} s | ${d.kubectlOverheadSeconds.toFixed(2)} s |`,
    `| overhead ratio ours/kubectl | ${d.overheadRatio.toFixed(2)} | 1 |`,
    `| API requests for the node | ${r.requestsPerNode.ours} | ${r.requestsPerNode.kubectl} |`,
    `| scale-in: ${r.scaleIn.nodes} nodes x ${r.scaleIn.podsPerNode} pods, until the last action completes | ${r.scaleIn.seconds.toFixed(2)} s | |`,
    `| scale-in: peak requests in flight at the API server | ${r.scaleIn.peakRequestsInFlight} | |`,
    `| memory: peak RSS of a fresh process draining ${r.memory.pods} pods (empty node: ${r.memory.emptyNodeMaxRssMiB.toFixed(0)} MiB) | ${r.memory.maxRssMiB.toFixed(0)} MiB | |`,
    `| deployed asset: both functions, every chunk | ${(r.coldStart.assetBytes / 1024).toFixed(0)} KiB | |`,
    `| cold start: bytes loaded | ${(r.coldStart.bundleBytes / 1024).toFixed(0)} KiB | |`,
    `| cold start: import + construct, median of ${r.coldStart.runs} (empty node: ${r.coldStart.emptyNodeMsMedian.toFixed(0)} ms) | ${r.coldStart.initMsMedian.toFixed(0)} ms (+${r.coldStart.initAboveEmptyMs.toFixed(0)} ms) | |`,
    '',
    `Measured on ${r.machine.cores} x ${r.machine.cpu}, ${r.machine.memoryGiB} GiB, Node ${r.machine.node}; Kubernetes ${r.versions['kubernetes']}, etcd ${r.versions['etcd']}, kwok ${r.versions['kwok']}.`,
  ].join('\n');
}
