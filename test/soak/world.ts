// One soak run's world on a control plane: the local AWS endpoint (Auto Scaling, EC2, EKS, SNS:
// demo/local-aws.ts) and ELB stand-in (test/fakes/elb-stub.ts), the fault proxy in front of the
// API server (test/cluster/fault-proxy.ts), the function's containers (lambda.ts), the run's
// nodes and workloads, the players that release instances in AWS (players.ts), and the recorder.
// Names carry the run's number, so runs (the shrinker's) share one plane without meeting.
import { randomUUID } from 'node:crypto';
import {
  admin,
  bindTargetGroup,
  createBoundClaim,
  ensureNamespace,
  installTargetGroupBindingCrd,
  podAnnotations,
  podSpec,
  rbacFile,
  surgeFile,
  until,
  type Admin,
} from '../cluster/kube.js';
import { startFaultProxy, type FaultProxy } from '../cluster/fault-proxy.js';
import type { PlaneInfo } from '../cluster/plane/plane.js';
import { testAws } from '../cluster/plane/token-webhook.js';
import { startElbStub, type ElbStub, type StubTargetGroup } from '../fakes/elb-stub.js';
import { localAwsEnvironment, startLocalAws, type LocalAws } from '../../demo/local-aws.js';
import { AutoScaling, launchHook, terminateHook } from './auto-scaling.js';
import { shiftTimestamps, type SoakClock } from './clock.js';
import { Faults } from './faults.js';
import { LambdaModel } from './lambda.js';
import { playTargets, playVolumes, type Player } from './players.js';
import { Random } from './random.js';
import { nodeState, Recorder } from './recorder.js';
import type { NodeSpec, Scenario, WorkloadSpec } from './scenario.js';

export interface World {
  readonly admin: Admin;
  readonly namespace: string;
  readonly deploymentName: string;
  readonly aws: LocalAws;
  readonly elb: ElbStub;
  readonly proxy: FaultProxy;
  readonly faults: Faults;
  readonly lambda: LambdaModel;
  readonly autoScaling: AutoScaling;
  readonly recorder: Recorder;
  readonly targetGroup: StubTargetGroup;
  /** The persistent volumes of the run's claims, by claim. */
  readonly volumes: ReadonlyMap<string, string>;
  /** A workload more (a Job, a pod the timeline starts). */
  addWorkload(w: WorkloadSpec): Promise<void>;
  /** Handler log lines by message, counted (the report's numbers). */
  readonly logCounts: Map<string, number>;
  readonly logs: Record<string, unknown>[];
  stop(): Promise<void>;
}

export interface WorldOptions {
  readonly plane: PlaneInfo;
  readonly scenario: Scenario;
  /** Keeps this run's names apart from earlier runs on the same plane. */
  readonly run: number;
  readonly clock: SoakClock;
  readonly say: (line: string) => void;
}

const handOffTopicArn = `arn:aws:sns:${testAws.region}:${testAws.accountId}:graceful-node-termination-soak`;
let planeReady: Promise<void> | undefined;

/** What every run needs once per plane: the shipped RBAC, surge's rights and fence, the TargetGroupBinding CRD. */
function preparePlane(a: Admin): Promise<void> {
  planeReady ??= (async () => {
    a.kubectl('apply', '-f', rbacFile);
    a.kubectl('apply', '-f', surgeFile);
    await installTargetGroupBindingCrd(a);
  })();
  return planeReady;
}

export async function startWorld(o: WorldOptions): Promise<World> {
  const { scenario, clock, say } = o;
  const a = admin(o.plane);
  await preparePlane(a);
  const namespace = `soak-${o.run}`;
  const deploymentName = `soak-${o.run}`;
  const random = new Random(scenario.seed).fork(`run/${o.run}`);
  const elb = await startElbStub();
  const faults = new Faults(random.fork('faults'), clock.realNow, elb);
  const proxy = await startFaultProxy(o.plane, {
    intercept: faults.intercept,
    rewrite: {
      request: (text) => shiftTimestamps(text, -clock.offsetMs()),
      response: (text) => shiftTimestamps(text, clock.offsetMs()),
    },
  });
  let autoScaling: AutoScaling | undefined;
  const aws = await startLocalAws(
    { name: testAws.clusterName, endpoint: proxy.url, caPem: o.plane.caPem },
    { throttle: faults.throttle, beforeAnswer: (call) => autoScaling!.beforeAnswer(call) },
  );
  for (const g of scenario.groups) aws.hooks.set(g, ['soak']);
  const env = handlerEnvironment(o, aws, elb, deploymentName);
  const logs: Record<string, unknown>[] = [];
  const logCounts = new Map<string, number>();
  const lambda = new LambdaModel({
    env,
    clock: clock.buffer,
    invocationSeconds: scenario.settings.invocationSeconds,
    maxContainers: 6,
    retryDelaysMs: [3_000, 6_000],
    realNow: clock.realNow,
    onLog: (entry) => {
      logs.push(entry);
      const message = String(entry['message']);
      logCounts.set(message, (logCounts.get(message) ?? 0) + 1);
    },
  });
  const recorder = new Recorder(a, namespace, clock.realNow);
  await ensureNamespace(a, namespace);
  recorder.start();
  const targetGroup = elb.addTargetGroup(`k8s-${namespace}-web-${random.hex(10)}`, {
    tags: { 'elbv2.k8s.aws/cluster': testAws.clusterName, 'service.k8s.aws/stack': `${namespace}/web` },
  });
  const volumes = new Map<string, string>();
  const addNode = async (spec: NodeSpec) => {
    await createNode(a, spec, namespace);
    const node = await until(`node ${spec.name} Ready`, 60_000, async () => {
      const n = await a.core.readNode({ name: spec.name });
      return n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? n : undefined;
    });
    recorder.addNode(spec.name, spec.instanceId, spec.group, nodeState(node));
  };
  autoScaling = new AutoScaling({
    aws,
    targetGroup,
    lambda,
    admin: a,
    clock,
    random: random.fork('auto-scaling'),
    settings: scenario.settings,
    volumes,
    addNode,
    say,
    startedMs: clock.realNow(),
  });
  autoScaling.start();
  aws.onPublish((topic, message) => topic === handOffTopicArn && autoScaling!.handOff(message));
  say(`run ${o.run}: ${scenario.nodes.length} nodes in ${scenario.groups.join(', ')}, namespace ${namespace}`);
  for (const spec of scenario.nodes) autoScaling.register(spec, 'InService');
  await Promise.all(scenario.nodes.map(addNode));
  const players: Player[] = [
    playTargets(a, targetGroup, {
      nodes: () => new Map([...autoScaling!.specs.values()].map((s) => [s.name, s.instanceId])),
      terminated: (id) =>
        aws.instances.get(id)?.ec2State !== undefined && aws.instances.get(id)?.ec2State !== 'running',
      drainSeconds: scenario.settings.targetDrainSeconds,
    }),
  ];
  const context: WorkloadContext = { namespace, targetGroup, volumes, players, scenario };
  await createWorkloads(a, namespace, scenario.workloads, context);
  say(`run ${o.run}: workloads ready`);
  return {
    admin: a,
    namespace,
    deploymentName,
    aws,
    elb,
    proxy,
    faults,
    lambda,
    autoScaling,
    recorder,
    targetGroup,
    logCounts,
    logs,
    volumes,
    addWorkload: (w) => createWorkload(a, namespace, w, context),
    async stop() {
      for (const p of players) p.stop();
      autoScaling!.stop();
      recorder.stop();
      await lambda.stop();
      await aws.stop();
      await proxy.stop();
      await elb.close();
    },
  };
}

/** The function's variables: the scenario's settings, the local endpoints, hand-offs and the reconciler on. */
function handlerEnvironment(
  o: WorldOptions,
  aws: LocalAws,
  elb: ElbStub,
  deploymentName: string,
): Record<string, string> {
  const s = o.scenario.settings;
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined),
  );
  const { MODE: _vitestMode, ...base } = inherited;
  return {
    ...base,
    ...localAwsEnvironment(aws),
    AWS_ACCESS_KEY_ID: testAws.accessKeyId,
    AWS_SECRET_ACCESS_KEY: testAws.secretAccessKey,
    AWS_REGION: testAws.region,
    CLUSTER_NAME: testAws.clusterName,
    AUTO_SCALING_GROUP_NAMES: o.scenario.groups.join(','),
    LIFECYCLE_HOOK_NAMES: `${terminateHook},${launchHook}`,
    DEPLOYMENT_NAME: deploymentName,
    HAND_OFF_TOPIC_ARN: handOffTopicArn,
    DRAIN_TIMEOUT_SECONDS: String(s.drainTimeoutSeconds),
    DEADLINE_POLICY: s.deadlinePolicy,
    INVOCATION_MARGIN_SECONDS: String(s.invocationMarginSeconds),
    HEARTBEAT_TIMEOUT_SECONDS: String(s.heartbeatTimeoutSeconds),
    RECONCILE_INTERVAL_MINUTES: String(s.reconcileIntervalMinutes),
    BATCH_WAIT_SECONDS: String(s.batchWaitSeconds),
    MIN_EVICTION_WINDOW_SECONDS: String(s.minEvictionWindowSeconds),
    LAUNCH_TIMEOUT_SECONDS: String(s.launchTimeoutSeconds),
    LOAD_BALANCER_DELAY_SECONDS: String(s.loadBalancerDelaySeconds),
    WAIT_FOR_TARGETS: 'true',
    LOAD_BALANCER_MIN_WAIT_SECONDS: '2',
    LOAD_BALANCER_MAX_WAIT_SECONDS: String(s.loadBalancerMaxWaitSeconds),
    AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2: elb.url,
    AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING: elb.url,
    SURGE_BEFORE_EVICT: 'true',
    SURGE_TIMEOUT_SECONDS: String(s.surgeTimeoutSeconds),
    EVICT_DAEMONSET_PODS: String(s.evictDaemonSetPods),
    SPOT_INTERRUPTIONS: 'true',
    TERMINATION_DEFERRAL_MAX_SECONDS: String(s.terminationDeferralMaxSeconds),
    POWERTOOLS_LOG_LEVEL: 'INFO',
  };
}

/** A kwok node for the instance: named as the scenario says, its providerID naming the instance. */
async function createNode(a: Admin, spec: NodeSpec, namespace: string): Promise<void> {
  await a.core.createNode({
    body: {
      metadata: {
        name: spec.name,
        annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
        labels: {
          'kubernetes.io/hostname': spec.name,
          'kubernetes.io/os': 'linux',
          'topology.kubernetes.io/zone': spec.zone,
          'soak/group': spec.group,
          'soak/run': namespace,
          ...(spec.spot ? { 'soak/capacity': 'spot' } : {}),
        },
      },
      spec: { providerID: `aws:///${spec.zone}/${spec.instanceId}` },
      status: {
        allocatable: { cpu: '32', memory: '256Gi', pods: '250' },
        capacity: { cpu: '32', memory: '256Gi', pods: '250' },
      },
    },
  });
}

interface WorkloadContext {
  readonly namespace: string;
  readonly targetGroup: StubTargetGroup;
  readonly volumes: Map<string, string>;
  readonly players: Player[];
  readonly scenario: Scenario;
}

async function createWorkloads(a: Admin, namespace: string, workloads: readonly WorkloadSpec[], c: WorkloadContext) {
  for (const w of workloads) await createWorkload(a, namespace, w, c);
  await until('the workloads running', 120_000, async () => {
    const pods = (await a.core.listNamespacedPod({ namespace })).items;
    return pods.length > 0 && pods.every((p) => p.status?.phase === 'Running' || p.status?.phase === 'Succeeded');
  });
}

export async function createWorkload(a: Admin, namespace: string, w: WorkloadSpec, c: WorkloadContext): Promise<void> {
  switch (w.kind) {
    case 'daemonset':
      await a.apps.createNamespacedDaemonSet({
        namespace,
        body: {
          metadata: { name: w.name },
          spec: {
            selector: { matchLabels: { app: w.name } },
            template: {
              metadata: { labels: { app: w.name } },
              spec: { ...podSpec({ nodeSelector: nodeSelectorOf(c) }), tolerations: [{ operator: 'Exists' }] },
            },
          },
        },
      });
      return;
    case 'deployment':
      return createSoakDeployment(a, namespace, w, c);
    case 'statefulset':
      return createStatefulSet(a, namespace, w, c);
    case 'job':
      await a.batch.createNamespacedJob({
        namespace,
        body: {
          metadata: { name: w.name },
          spec: {
            parallelism: w.parallelism,
            completions: w.parallelism,
            backoffLimit: 0,
            template: {
              metadata: {
                labels: { app: w.name },
                annotations: completesAfter(w.completeAfterSeconds),
              },
              spec: { ...podSpec({ nodeSelector: nodeSelectorOf(c) }), restartPolicy: 'Never' },
            },
          },
        },
      });
      return;
    case 'pod':
      await a.core.createNamespacedPod({
        namespace,
        body: {
          metadata: {
            name: w.name,
            labels: { ...w.labels, app: w.name },
            annotations: w.completeAfterSeconds === undefined ? {} : completesAfter(w.completeAfterSeconds),
          },
          spec: { ...podSpec({ nodeSelector: nodeSelectorOf(c) }), restartPolicy: 'Never' },
        },
      });
      return;
  }
}

/** kwok completes the pod this long after it runs (test/cluster/plane/kwok-stages.yaml, pod-complete). */
const completesAfter = (seconds: number) => ({
  'pod-complete.stage.kwok.x-k8s.io/delay': `${seconds}s`,
  'pod-complete.stage.kwok.x-k8s.io/jitter-delay': `${seconds}s`,
});

/** The run's nodes only: the workloads stay off other runs' nodes (and the suite's). */
function nodeSelectorOf(c: WorkloadContext): Record<string, string> {
  return { 'soak/run': c.namespace };
}

async function createSoakDeployment(
  a: Admin,
  namespace: string,
  w: WorkloadSpec & { kind: 'deployment' },
  c: WorkloadContext,
): Promise<void> {
  const pod = {
    nodeSelector: nodeSelectorOf(c),
    deleteDelay: `${w.deleteDelaySeconds}s`,
    ...(w.readyDelaySeconds ? { readyDelay: `${w.readyDelaySeconds}s`, readinessProbe: true } : {}),
    annotations: { ...w.annotations },
    spreadOverNodes: true,
    app: w.name,
  };
  await a.apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: {
        name: w.name,
        ...(w.surge ? { annotations: { 'graceful-node-termination/surge-before-evict': 'true' } } : {}),
      },
      spec: {
        replicas: w.replicas,
        selector: { matchLabels: { app: w.name } },
        template: {
          metadata: { labels: { ...w.labels, app: w.name }, annotations: podAnnotations(pod) },
          spec: podSpec(pod),
        },
      },
    },
  });
  if (w.budget)
    await a.policy.createNamespacedPodDisruptionBudget({
      namespace,
      body: { metadata: { name: w.name }, spec: { ...w.budget, selector: { matchLabels: { app: w.name } } } },
    });
  if (w.targetGroup)
    await bindTargetGroup(a, {
      namespace,
      service: w.name,
      binding: c.targetGroup.name,
      targetGroupArn: c.targetGroup.arn,
      targetPort: 80,
    });
}

async function createStatefulSet(
  a: Admin,
  namespace: string,
  w: WorkloadSpec & { kind: 'statefulset' },
  c: WorkloadContext,
): Promise<void> {
  // The claims a StatefulSet's pods use, bound ahead to their volumes, as a CSI provisioner leaves them.
  for (let i = 0; i < w.replicas; i++) {
    const claim = `data-${w.name}-${i}`;
    const pv = `pv-${namespace}-${claim}-${randomUUID().slice(0, 8)}`;
    await createBoundClaim(a, namespace, claim, pv);
    c.volumes.set(claim, pv);
  }
  const pod = {
    nodeSelector: nodeSelectorOf(c),
    deleteDelay: `${w.deleteDelaySeconds}s`,
    annotations: { ...w.annotations },
  };
  await a.apps.createNamespacedStatefulSet({
    namespace,
    body: {
      metadata: { name: w.name },
      spec: {
        replicas: w.replicas,
        serviceName: w.name,
        podManagementPolicy: 'Parallel',
        selector: { matchLabels: { app: w.name } },
        template: {
          metadata: { labels: { app: w.name }, annotations: podAnnotations(pod) },
          spec: podSpec(pod),
        },
        volumeClaimTemplates: [
          {
            metadata: { name: 'data' },
            spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', resources: { requests: { storage: '1Gi' } } },
          },
        ],
      },
    },
  });
  c.players.push(
    playVolumes(a, { namespace, selector: `app=${w.name}`, volumes: c.volumes, detachSeconds: w.detachSeconds }),
  );
}
