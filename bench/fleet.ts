// The fleet section of `npm run bench` (issue 13): the same handler on a 3-node cluster and,
// in the same run, on 2,000 nodes of realistic size; a launch whose node joins 30 s late; one
// reconcile pass with nothing marked (3 and 2,000 nodes) and with 10 stale drain marks; a
// scale-in of 10 of 20 nodes with and without sibling cordoning. Requests come from the API
// server's audit log, bytes from a loopback proxy in front of it (what the handler read, as
// it came over the wire), memory from a fresh process running the deployed bundle.
import { randomBytes } from 'node:crypto';
import type { V1Node } from '@kubernetes/client-node';
import { groupName, startEnvironment } from '../demo/environment.js';
import {
  byDrainer,
  createDeployment,
  createPdb,
  ensureNamespace,
  newInstanceId,
  readAudit,
  sleep,
  until,
  waitNodeReady,
  type Admin,
  type AuditEntry,
} from '../test/cluster/kube.js';
import { measureDrainMemory } from './memory.js';
import { reconcilePass, removeDrainedNodes, staleMarksPass, type ReconcileProbe } from './reconcile.js';
import { bytesByKind } from './wire.js';

export interface FleetOptions {
  readonly say: (line: string) => void;
  /** The deployed bundle (index.mjs), run in a fresh process for memory. */
  readonly bundlePath: string;
  readonly largeNodes: number;
}

export interface Lookup {
  readonly nodes: number;
  /** Requests the handler made to the API server for the termination (audit log). */
  readonly requests: number;
  /** Bytes of the answers, as on the wire (proxy). */
  readonly responseBytes: number;
  /** Node reads among them: get and list of nodes. */
  readonly nodeReads: readonly string[];
  /** Bytes per kind of request (proxy), largest first. */
  readonly bytesBy: Readonly<Record<string, number>>;
  readonly maxRssMiB: number;
}

export interface ScaleIn {
  readonly nodes: number;
  readonly terminated: number;
  readonly replicas: number;
  readonly cordonDoomedSiblings: boolean;
  /** Original pods on the terminated nodes. */
  readonly originalPodsOnTerminated: number;
  /** Successful evictions over the original pods: 1.0 when every pod moved once. */
  readonly evictionsPerOriginalPod: number;
  /** Evictions of pods created after the scale-in began (replacements that landed on a doomed node). */
  readonly podsEvictedTwice: number;
  readonly seconds: number;
  readonly peakRequestsInFlight: number;
  readonly throttled429: number;
}

const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 100) / 100;

/**
 * The node lifecycle controller takes the not-ready taint (added to every new node) off each
 * stand-in node: waited for, so measurements do not run beside 2,000 of its writes.
 */
export async function fillersSettled(
  a: Admin,
  onTainted: (tainted: number) => void,
  intervalMs: number,
): Promise<void> {
  await until(
    'the stand-in nodes settled (not-ready taints removed)',
    600_000,
    async () => {
      let tainted = 0;
      let cont: string | undefined;
      do {
        const page = await a.core.listNode({ limit: 500, _continue: cont, labelSelector: 'bench/filler=true' });
        tainted += page.items.filter((n) =>
          n.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/not-ready'),
        ).length;
        cont = page.metadata?._continue;
      } while (cont);
      if (tainted > 0) onTainted(tainted);
      return tainted === 0;
    },
    intervalMs,
  );
}

/**
 * A node as a real EKS worker's object is shaped: ~15 labels, the usual annotations, five
 * conditions, four addresses, nodeInfo and ~45 cached images (the kubelet reports up to 50).
 * The server adds managedFields on top. No kubelet runs it: tainted so nothing schedules.
 */
export function fillerNode(i: number, zone: string): V1Node {
  const ip = `10.${64 + ((i >> 16) & 63)}.${(i >> 8) & 255}.${i & 255}`;
  const name = `ip-${ip.replaceAll('.', '-')}.eu-west-1.compute.internal`;
  const instanceId = `i-0${randomBytes(8).toString('hex')}`;
  const now = new Date();
  const image = (n: number) => {
    const repo = `602401143452.dkr.ecr.eu-west-1.amazonaws.com/team-${n % 17}/service-${n}`;
    const digest = randomBytes(32).toString('hex');
    return {
      names: [`${repo}@sha256:${digest}`, `${repo}:v1.${n}.${i % 10}-eksbuild.1`],
      sizeBytes: 20_000_000 + n * 1_234_567,
    };
  };
  const condition = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  });
  return {
    metadata: {
      name,
      labels: {
        'beta.kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/instance-type': 'm6i.2xlarge',
        'beta.kubernetes.io/os': 'linux',
        'eks.amazonaws.com/capacityType': 'ON_DEMAND',
        'eks.amazonaws.com/nodegroup-image': 'ami-0123456789abcdef0',
        'failure-domain.beta.kubernetes.io/region': 'eu-west-1',
        'failure-domain.beta.kubernetes.io/zone': zone,
        'k8s.io/cloud-provider-aws': 'b1ba2ef1a08ac2e0bb7fda5e7fa4b3c0',
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'node.kubernetes.io/instance-type': 'm6i.2xlarge',
        'topology.ebs.csi.aws.com/zone': zone,
        'topology.k8s.aws/zone-id': 'euw1-az2',
        'topology.kubernetes.io/region': 'eu-west-1',
        'topology.kubernetes.io/zone': zone,
        'bench/filler': 'true',
      },
      annotations: {
        'alpha.kubernetes.io/provided-node-ip': ip,
        'csi.volume.kubernetes.io/nodeid': JSON.stringify({
          'ebs.csi.aws.com': instanceId,
          'efs.csi.aws.com': instanceId,
        }),
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
      },
    },
    spec: {
      providerID: `aws:///${zone}/${instanceId}`,
      taints: [{ key: 'bench/filler', value: 'true', effect: 'NoSchedule' }],
    },
    status: {
      capacity: {
        cpu: '8',
        'ephemeral-storage': '83873772Ki',
        'hugepages-1Gi': '0',
        'hugepages-2Mi': '0',
        memory: '32386520Ki',
        pods: '58',
      },
      allocatable: {
        cpu: '7910m',
        'ephemeral-storage': '76224326324',
        'hugepages-1Gi': '0',
        'hugepages-2Mi': '0',
        memory: '31369688Ki',
        pods: '58',
      },
      conditions: [
        condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
        condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
      ],
      addresses: [
        { type: 'InternalIP', address: ip },
        { type: 'InternalDNS', address: name },
        { type: 'Hostname', address: name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: randomBytes(16).toString('hex'),
        systemUUID: `ec2${randomBytes(13).toString('hex')}`,
        bootID: `${randomBytes(4).toString('hex')}-${randomBytes(2).toString('hex')}-${randomBytes(2).toString('hex')}-${randomBytes(2).toString('hex')}-${randomBytes(6).toString('hex')}`,
        kernelVersion: '6.1.115-126.197.amzn2023.x86_64',
        osImage: 'Amazon Linux 2023.6.20241121',
        containerRuntimeVersion: 'containerd://1.7.23',
        kubeletVersion: 'v1.34.4-eks-1234567',
        kubeProxyVersion: 'v1.34.4-eks-1234567',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
      images: Array.from({ length: 44 }, (_, n) => image(n)),
    },
  };
}

export async function runFleet(o: FleetOptions): Promise<Record<string, unknown>> {
  const { say } = o;
  const env = await startEnvironment({
    log: say,
    loadBalancerDelaySeconds: 0,
    drainTimeoutSeconds: 600,
    manyNodesWithoutKubelet: true,
    countBytes: true,
  });
  try {
    const a = env.admin;
    await ensureNamespace(a, 'fleet');

    /** A node of the group running `pods` pods of its own Deployment (1 s shutdowns). */
    const nodeWithPods = async (name: string, pods: number) => {
      const instanceId = newInstanceId();
      await env.addNode(name, instanceId, { 'fleet-pool': name });
      await waitNodeReady(a, name);
      // Until the node lifecycle controller took the not-ready taint off: a pod that met it would
      // carry a failed scheduling attempt in its status, and bytes must compare like with like.
      await until(
        `${name} untainted`,
        60_000,
        async () => ((await a.core.readNode({ name })).spec?.taints ?? []).length === 0,
      );
      await createDeployment(a, 'fleet', name, pods, { nodeSelector: { 'fleet-pool': name }, deleteDelay: '1s' });
      await until(
        `${pods} pods Running on ${name}`,
        120_000,
        async () =>
          (
            await a.core.listNamespacedPod({
              namespace: 'fleet',
              fieldSelector: `spec.nodeName=${name},status.phase=Running`,
            })
          ).items.length === pods,
        500,
      );
      return { name, instanceId };
    };
    /** Where the proxy's answers stand now, and the bytes of those answered since. */
    const mark = () => env.proxy!.counts.answers.length;
    const bytesSince = (at: number) => env.proxy!.counts.answers.slice(at).reduce((n, a) => n + a.bytes, 0);
    const countNodes = async () => (await a.core.listNode({ limit: 1 })).metadata?.remainingItemCount ?? 0;

    /** One termination run by the deployed bundle in a fresh process: requests, bytes, memory. */
    const measureLookup = async (target: { name: string; instanceId: string }): Promise<Lookup> => {
      const nodes = (await countNodes()) + 1;
      await sleep(300);
      const answersBefore = mark();
      const started = Date.now();
      const { NODE_OPTIONS: _loaders, ...bundleEnvironment } = env.handlerEnvironment;
      const memory = await measureDrainMemory(o.bundlePath, bundleEnvironment, env.notify(target.instanceId).event);
      const status = (memory.result as { records?: { status?: string }[] }).records?.[0]?.status;
      if (status !== 'drained')
        throw new Error(`fleet: the bundle did not drain ${target.name}: ${JSON.stringify(memory.result)}`);
      const requests = readAudit(env.plane, (e) => byDrainer(e) && e.receivedMs >= started - 50);
      return {
        nodes,
        requests: requests.length,
        responseBytes: bytesSince(answersBefore),
        nodeReads: requests
          .filter((e) => e.resource === 'nodes' && (e.verb === 'get' || e.verb === 'list'))
          .map((e) => `${e.verb} ${e.name ?? ''}`.trim()),
        bytesBy: bytesByKind(env.proxy!.counts.answers.slice(answersBefore)),
        maxRssMiB: memory.maxRssMiB,
      };
    };

    // --- small: a 3-node cluster
    const small = await nodeWithPods('fleet-small', 5);
    const large = await nodeWithPods('fleet-large', 5);
    await env.addNode('fleet-spare', newInstanceId(), { 'fleet-pool': 'spare' });
    const probe: ReconcileProbe = { env, bundlePath: o.bundlePath, nodes: async () => (await countNodes()) + 1 };
    say(`fleet: ${await probe.nodes()} nodes, nothing marked; one reconcile pass with the bundle in a fresh process`);
    const reconcileSmall = await reconcilePass(probe);
    say(
      `fleet: reconcile, nothing marked, small cluster: ${reconcileSmall.requests} requests, ${reconcileSmall.responseBytes} bytes, ${reconcileSmall.awsCalls} AWS calls`,
    );
    say(
      `fleet: ${(await countNodes()) + 1} nodes; terminating ${small.name} (5 pods) with the bundle in a fresh process`,
    );
    const lookupSmall = await measureLookup(small);
    say(
      `fleet: small cluster: ${lookupSmall.requests} requests, ${lookupSmall.responseBytes} bytes, peak RSS ${lookupSmall.maxRssMiB} MiB`,
    );
    // Its instance terminates, as in AWS a minute after CONTINUE: Auto Scaling forgets it and
    // its node goes. Left in Terminating:Proceed (where the stand-in keeps it), the large
    // termination would find it among the group's leaving instances and read its node too.
    env.aws.instances.delete(small.instanceId);
    await a.core.deleteNode({ name: small.name });

    // --- large: 2,000 nodes of realistic size
    const fillers = o.largeNodes - (await countNodes()) - 1;
    say(`fleet: creating ${fillers} stand-in nodes of realistic size (no kubelet; tainted)`);
    const zones = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'];
    let next = 0;
    const createFillers = async () => {
      for (let i = next++; i < fillers; i = next++) {
        await a.core.createNode({ body: fillerNode(i, zones[i % 3]!) });
        if ((i + 1) % 500 === 0) say(`fleet: ${i + 1} of ${fillers} stand-in nodes`);
      }
    };
    await Promise.all(Array.from({ length: 16 }, createFillers));
    await fillersSettled(
      a,
      (tainted) => say(`fleet: ${tainted} stand-in nodes still carry the not-ready taint`),
      5_000,
    );
    const sample = await a.core.readNode({ name: fillerNode(0, 'x').metadata!.name! });
    const nodeJsonBytes = Buffer.byteLength(JSON.stringify(sample));
    say(
      `fleet: ${(await countNodes()) + 1} nodes; a stand-in node is ${nodeJsonBytes} bytes of JSON with its managedFields`,
    );
    const lookupLarge = await measureLookup(large);
    say(
      `fleet: large cluster: ${lookupLarge.requests} requests, ${lookupLarge.responseBytes} bytes, peak RSS ${lookupLarge.maxRssMiB} MiB`,
    );

    // A termination whose node is not under its EC2 name: the scan, paged and gzipped.
    const missing = newInstanceId();
    const scanAnswers = mark();
    const missingStart = Date.now();
    const missingRun = await env.terminate(missing);
    const missingRequests = readAudit(env.plane, (e) => byDrainer(e) && e.receivedMs >= missingStart - 50);
    const scan = {
      outcome: statusOf(missingRun.result),
      requests: missingRequests.length,
      responseBytes: bytesSince(scanAnswers),
      requestUris: missingRequests.map((e) => `${e.verb} ${e.requestURI.replace(/continue=[^&]+/, 'continue=...')}`),
    };
    say(
      `fleet: an instance with no node at ${o.largeNodes} nodes (the fallback scan): ${scan.requests} requests, ${scan.responseBytes} bytes`,
    );

    // --- a launch whose node joins 30 s after the notification
    const launchId = newInstanceId();
    const launchName = 'fleet-launching';
    env.aws.instances.set(launchId, { privateDnsName: launchName, group: groupName, lifecycleState: 'Pending' });
    await sleep(300);
    const launchStart = Date.now();
    const launchAnswers = mark();
    say('fleet: a launch whose node registers 30 s after the notification');
    const joining = sleep(30_000).then(() => env.addNode(launchName, launchId, { 'fleet-pool': 'launch' }));
    const launched = await env.launch(launchId);
    await joining;
    if (statusOf(launched) !== 'launch-admitted')
      throw new Error(`fleet: the launch was not admitted: ${JSON.stringify(launched)}`);
    const launchRequests = readAudit(env.plane, (e) => byDrainer(e) && e.receivedMs >= launchStart - 50);
    const launch = {
      nodeJoinsAfterSeconds: 30,
      requestsPerLaunch: launchRequests.length,
      responseBytes: bytesSince(launchAnswers),
      requests: launchRequests.map((e) => `${e.verb} ${e.resource}`),
      seconds: round((Date.now() - launchStart) / 1000),
    };
    say(
      `fleet: launch admitted after ${launch.seconds} s with ${launch.requestsPerLaunch} requests (${launch.requests.join(', ')})`,
    );

    // --- one reconcile pass on the large cluster: nothing marked, then 10 stale drain marks
    const gone = await removeDrainedNodes(env);
    say(
      `fleet: the nodes drained above (${gone.join(', ')}) went with their instances; one reconcile pass with nothing marked`,
    );
    const reconcileLarge = await reconcilePass(probe);
    say(
      `fleet: reconcile, nothing marked, ${reconcileLarge.nodes} nodes: ${reconcileLarge.requests} requests, ${reconcileLarge.responseBytes} bytes, ${reconcileLarge.awsCalls} AWS calls`,
    );
    // Ten stand-ins spread over the cluster (and over its list pages).
    const staleNames = Array.from(
      { length: 10 },
      (_, k) => fillerNode(Math.floor((k * fillers) / 10), 'x').metadata!.name!,
    );
    say(`fleet: 10 stale drain marks (instances InService); one reconcile pass`);
    const reconcileStale = await staleMarksPass(probe, staleNames);
    say(
      `fleet: reconcile, 10 stale marks: ${reconcileStale.requests} requests, ${reconcileStale.responseBytes} bytes, ${reconcileStale.awsCalls} AWS calls; ${reconcileStale.unmarkedAfter} of 10 unmarked`,
    );

    // --- scale-in: 10 of 20 nodes at once, with and without sibling cordoning
    const scaleIn = async (pool: string, cordonDoomedSiblings: boolean): Promise<ScaleIn> => {
      const nodes = Array.from({ length: 20 }, (_, i) => ({
        name: `fleet-${pool}-${i + 1}`,
        instanceId: newInstanceId(),
      }));
      for (const n of nodes) await env.addNode(n.name, n.instanceId, { 'fleet-pool': pool });
      for (const n of nodes) await waitNodeReady(a, n.name);
      const apps = Array.from({ length: 5 }, (_, i) => `${pool}-app-${i + 1}`);
      // Doomed and staying nodes interleaved; the scheduler spreads the replicas over all 20, so
      // a replacement finds a doomed sibling as attractive as a node that stays.
      const doomed = nodes.filter((_, i) => i % 2 === 0);
      for (const app of apps) {
        await createDeployment(a, 'fleet', app, 10, { nodeSelector: { 'fleet-pool': pool }, deleteDelay: '1s' });
        await createPdb(a, 'fleet', app, app, 8);
      }
      const running = async () =>
        (
          await a.core.listNamespacedPod({ namespace: 'fleet', labelSelector: `app in (${apps.join(',')})` })
        ).items.filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
      await until(`50 replicas Running in pool ${pool}`, 180_000, async () => (await running()).length === 50, 1000);
      // Budgets computed for every app before anything is evicted.
      await until(
        'budgets computed',
        60_000,
        async () => {
          const budgets = (await a.policy.listNamespacedPodDisruptionBudget({ namespace: 'fleet' })).items.filter((b) =>
            apps.includes(b.metadata?.name ?? ''),
          );
          return budgets.length === apps.length && budgets.every((b) => b.status?.currentHealthy === 10);
        },
        500,
      );
      const before = await running();
      const originals = new Set(before.map((p) => p.metadata!.name!));
      const onDoomed = before.filter((p) => doomed.some((n) => n.name === p.spec?.nodeName)).length;
      // Auto Scaling moves all ten to Terminating:Wait at once; the notifications arrive 0-2 s apart.
      for (const n of doomed) env.aws.instances.get(n.instanceId)!.lifecycleState = 'Terminating:Wait';
      await sleep(300);
      const started = Date.now();
      const completionsBefore = env.aws.calls.length;
      const offsetsMs = doomed.map((_, i) => Math.round((i * 2000) / (doomed.length - 1)));
      say(
        `fleet: scale-in of 10 of 20 nodes (50 replicas, budgets minAvailable 8 of 10), sibling cordoning ${cordonDoomedSiblings ? 'on' : 'off'}`,
      );
      await Promise.all(
        doomed.map((n, i) =>
          sleep(offsetsMs[i]!).then(() =>
            env.terminate(n.instanceId, { settings: { CORDON_DOOMED_SIBLINGS: String(cordonDoomedSiblings) } }),
          ),
        ),
      );
      const completions = env.aws.calls
        .slice(completionsBefore)
        .filter((c) => c.action === 'CompleteLifecycleAction' && c.outcome === 'ok');
      if (completions.length !== doomed.length)
        throw new Error(`fleet scale-in: ${completions.length} of ${doomed.length} actions completed`);
      const seconds = (Math.max(...completions.map((c) => c.atMs)) - started) / 1000;
      const requests = readAudit(env.plane, (e) => byDrainer(e) && e.receivedMs >= started - 50);
      const evictions = requests.filter(
        (e) => e.subresource === 'eviction' && e.code === 201 && apps.some((app) => e.name?.startsWith(`${app}-`)),
      );
      const twice = evictions.filter((e) => !originals.has(e.name ?? ''));
      for (const app of apps) a.kubectl('delete', 'deployment', '-n', 'fleet', app, '--wait=false');
      const result: ScaleIn = {
        nodes: nodes.length,
        terminated: doomed.length,
        replicas: 50,
        cordonDoomedSiblings,
        originalPodsOnTerminated: onDoomed,
        evictionsPerOriginalPod: round(evictions.length / onDoomed),
        podsEvictedTwice: twice.length,
        seconds: round(seconds),
        peakRequestsInFlight: peakConcurrency(requests.filter((e) => e.verb !== 'watch')),
        // APF's 429s, not a budget's (those are the eviction API's answer, counted as blocks).
        throttled429: requests.filter((e) => e.code === 429 && !/disruption budget/i.test(e.message)).length,
      };
      say(
        `fleet: scale-in ${cordonDoomedSiblings ? 'with' : 'without'} sibling cordoning: ${evictions.length} evictions, ${twice.length} of replacements, last action after ${result.seconds} s`,
      );
      return result;
    };
    const withSiblings = await scaleIn('a', true);
    const withoutSiblings = await scaleIn('b', false);

    return {
      nodeJsonBytes,
      lookup: {
        small: lookupSmall,
        large: lookupLarge,
        bytesRatio: round(lookupLarge.responseBytes / lookupSmall.responseBytes),
        requestsRatio: round(lookupLarge.requests / lookupSmall.requests),
        missingNodeScan: scan,
      },
      launch,
      reconcile: {
        nothingMarked: {
          small: reconcileSmall,
          large: reconcileLarge,
          requestsRatio: round(reconcileLarge.requests / reconcileSmall.requests),
          bytesRatio: round(reconcileLarge.responseBytes / reconcileSmall.responseBytes),
        },
        staleDrainMarks: reconcileStale,
      },
      scaleIn: withSiblings,
      scaleInWithoutSiblingCordoning: withoutSiblings,
      memory: {
        smallMaxRssMiB: lookupSmall.maxRssMiB,
        largeMaxRssMiB: lookupLarge.maxRssMiB,
        ratio: round(lookupLarge.maxRssMiB / lookupSmall.maxRssMiB),
        responseMiBLarge: mib(lookupLarge.responseBytes),
      },
    };
  } finally {
    await env.stop();
  }
}

function statusOf(result: unknown): string {
  return (result as { records?: { status?: string }[] }).records?.[0]?.status ?? 'unknown';
}

/** Three decimals: what the results keep. */
export function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** Most requests the API server was serving at once, from their received and completed times. */
export function peakConcurrency(entries: readonly AuditEntry[]): number {
  const edges = entries.flatMap((e) => [
    { t: e.receivedMs, d: 1 },
    { t: e.atMs, d: -1 },
  ]);
  edges.sort((x, y) => x.t - y.t || x.d - y.d);
  let now = 0;
  let peak = 0;
  for (const { d } of edges) {
    now += d;
    peak = Math.max(peak, now);
  }
  return peak;
}
