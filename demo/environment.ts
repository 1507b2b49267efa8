// Everything the demo and the benchmark share: the local control plane, the shipped RBAC,
// the local AWS endpoint and the real handler (lambda/runtime.ts) in EKS mode, with its
// token checked by the plane's webhook, exactly as in production.
import { randomUUID } from 'node:crypto';
import { createRuntime, type LambdaHandler } from '../lambda/runtime.js';
import { captureHandlerLogs } from '../test/cluster/handler-logs.js';
import { startFaultProxy, type FaultProxy } from '../test/cluster/fault-proxy.js';
import { admin, createKwokNode, type Admin, rbacFile } from '../test/cluster/kube.js';
import { startPlane, type Plane, type PlaneInfo } from '../test/cluster/plane/plane.js';
import { testAws } from '../test/cluster/plane/token-webhook.js';
import { lifecycleMessage, snsEvent } from '../test/fixtures/notifications.js';
import type { RateLimit } from './aws-rate-limits.js';
import { localAwsEnvironment, startLocalAws, type LocalAws } from './local-aws.js';

export const groupName = 'demo-workers';
export const terminateHook = 'graceful-node-termination-terminate';
export const launchHook = 'graceful-node-termination-launch';

export interface EnvironmentOptions {
  readonly log: (line: string) => void;
  readonly loadBalancerDelaySeconds: number;
  readonly drainTimeoutSeconds?: number;
  /** Users whose requests the audit log also records (the benchmark audits kubectl). */
  readonly auditUsers?: readonly string[];
  /** Audit the scheduler's bindings too (PlaneOptions.auditBindings). */
  readonly auditBindings?: boolean;
  /**
   * Time each invocation gets (Lambda's timeout: 900). Shorter, a drain hands on through the
   * local SNS endpoint to fresh invocations, as it does in AWS when it outlasts one run.
   */
  readonly invocationSeconds?: number;
  /** See PlaneOptions: the fleet benchmark's stand-in nodes have no kubelet. */
  readonly manyNodesWithoutKubelet?: boolean;
  /**
   * Put a loopback proxy between the handler and the API server (DescribeCluster names it),
   * counting the bytes of every answer as it came over the wire.
   */
  readonly countBytes?: boolean;
  /**
   * Where the handler reads the load balancers (a local ELB stand-in, test/fakes/elb-stub.ts):
   * the settle phase waits for them (WAIT_FOR_TARGETS). Without it, the fixed delay.
   */
  readonly loadBalancersUrl?: string;
  /** Token buckets the local AWS endpoint enforces (aws-rate-limits.ts); none: no throttling. */
  readonly awsRateLimits?: readonly RateLimit[];
  /**
   * Builds the function's handler from its variables: this tree's createRuntime unless told
   * (the wave bench drives another tree's, to measure a previous version beside this one).
   */
  readonly createHandler?: (variables: Readonly<Record<string, string | undefined>>) => LambdaHandler;
  /**
   * As Lambda scales out: every invocation runs in a container of its own unless one is free
   * (each container a handler built once, its cold start included). Without it, one handler
   * per set of settings serves every invocation at once.
   */
  readonly containerPerInvocation?: boolean;
  /** Run on this plane (the cluster suite's) instead of starting one; stop() leaves it running. */
  readonly plane?: PlaneInfo;
  /** The groups the deployment serves (default: groupName alone): each gets its launch and terminate hooks. */
  readonly groups?: readonly string[];
}

/** One invocation of the function, as the environment started it. */
export interface Invocation {
  readonly event: unknown;
  /** A hand-off SNS delivered (published by an invocation), not a call of terminate/launch/deliver. */
  readonly handOff: boolean;
  readonly run: Promise<unknown>;
}

/** Handler variables for one call (CORDON_DOOMED_SIBLINGS=false, say); a handler is built per set. */
export interface CallOptions {
  readonly settings?: Readonly<Record<string, string>>;
}

export interface TerminateRun {
  readonly token: string;
  readonly notifiedMs: number;
  /** What the last invocation of the chain returned. */
  readonly result: unknown;
  /** Invocations the termination took: 1, plus one per hand-off. */
  readonly invocations: number;
}

export interface Environment {
  readonly plane: Plane;
  readonly admin: Admin;
  readonly aws: LocalAws;
  /** Every log line the handler wrote, parsed, as it arrives. */
  onHandlerLog(listener: (entry: Record<string, unknown>) => void): void;
  /** Every invocation as it starts (hand-offs included). */
  onInvocation(listener: (invocation: Invocation) => void): void;
  /** Handlers built so far: Lambda's containers, with containerPerInvocation. */
  containers(): number;
  /** The environment the handler runs with (the Lambda function's variables, here). */
  readonly handlerEnvironment: Readonly<Record<string, string | undefined>>;
  /** The counting proxy in front of the API server (countBytes). */
  readonly proxy: FaultProxy | undefined;
  /** A kwok node for an instance of the group (default groupName), known to EC2 under the node's name. */
  addNode(
    name: string,
    instanceId: string,
    labels?: Record<string, string>,
    taints?: { key: string; effect: string; value?: string }[],
    group?: string,
  ): Promise<void>;
  /** Opens a lifecycle action and returns the SNS event Auto Scaling would send for it. */
  notify(
    instanceId: string,
    transition?: 'TERMINATING' | 'LAUNCHING',
  ): { token: string; notifiedMs: number; event: unknown };
  /**
   * Sends the terminate notification Auto Scaling would send, runs the handler on it and on
   * every hand-off it publishes, and returns when the chain ends.
   */
  terminate(instanceId: string, options?: CallOptions): Promise<TerminateRun>;
  /** Sends the launch notification and returns what the handler answered. */
  launch(instanceId: string, options?: CallOptions): Promise<unknown>;
  /** Runs the handler on any event (an EventBridge event, say), as its rule would. */
  deliver(event: unknown, options?: CallOptions): Promise<unknown>;
  stop(): Promise<void>;
}

/** A command-line option that must be an integer >= min; the error names the option. */
export function integerOption(name: string, raw: string | undefined, min: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} ${raw} is invalid: expected an integer >= ${min}`);
  return n;
}

export async function startEnvironment(options: EnvironmentOptions): Promise<Environment> {
  const invocationSeconds = options.invocationSeconds ?? 900;
  const handOffTopicArn = `arn:aws:sns:${testAws.region}:${testAws.accountId}:graceful-node-termination`;
  const plane: Plane = options.plane
    ? { ...options.plane, stop: async () => {} }
    : await startPlane({
        log: options.log,
        auditUsers: options.auditUsers,
        auditBindings: options.auditBindings,
        manyNodesWithoutKubelet: options.manyNodesWithoutKubelet,
      });
  const groups = options.groups ?? [groupName];
  let aws: LocalAws | undefined;
  let proxy: FaultProxy | undefined;
  let stopCapture: (() => void) | undefined;
  try {
    const a = admin(plane);
    a.kubectl('apply', '-f', rbacFile);
    proxy = options.countBytes ? await startFaultProxy({ server: plane.server, caPem: plane.caPem }, {}) : undefined;
    aws = await startLocalAws(
      { name: testAws.clusterName, endpoint: proxy?.url ?? plane.server, caPem: plane.caPem },
      { rateLimits: options.awsRateLimits },
    );
    // Each served group has the deployment's hooks (upgrade and migrate find the deployment there).
    for (const g of groups) aws.hooks.set(g, [terminateHook.replace(/-terminate$/, '')]);
    const listeners: ((entry: Record<string, unknown>) => void)[] = [];
    stopCapture = captureHandlerLogs((entry) => listeners.forEach((l) => l(entry)));
    // The default credential chain reads these; the plane's webhook knows the same test key.
    Object.assign(process.env, localAwsEnvironment(aws), {
      AWS_ACCESS_KEY_ID: testAws.accessKeyId,
      AWS_SECRET_ACCESS_KEY: testAws.secretAccessKey,
      AWS_REGION: testAws.region,
    });
    const handlerEnvironment = {
      ...process.env,
      // Vitest sets MODE=test in its own process: not the handler's MODE (enforce | observe).
      ...(process.env['MODE'] === 'test' ? { MODE: undefined } : {}),
      CLUSTER_NAME: testAws.clusterName,
      AUTO_SCALING_GROUP_NAMES: groups.join(','),
      LIFECYCLE_HOOK_NAMES: `${terminateHook},${launchHook}`,
      DRAIN_TIMEOUT_SECONDS: String(options.drainTimeoutSeconds ?? 600),
      LOAD_BALANCER_DELAY_SECONDS: String(options.loadBalancerDelaySeconds),
      HAND_OFF_TOPIC_ARN: handOffTopicArn,
      // What the invocation keeps free to complete the action: Lambda's default 20 s would not
      // leave a short demo invocation any time to work.
      INVOCATION_MARGIN_SECONDS: String(Math.min(20, Math.max(1, Math.floor(invocationSeconds / 5)))),
      ...(options.loadBalancersUrl
        ? {
            WAIT_FOR_TARGETS: 'true',
            LOAD_BALANCER_MIN_WAIT_SECONDS: '2',
            AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2: options.loadBalancersUrl,
            AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING: options.loadBalancersUrl,
          }
        : { WAIT_FOR_TARGETS: 'false' }),
    };
    const build = options.createHandler ?? createRuntime;
    const containers: { key: string; handler: LambdaHandler; busy: boolean }[] = [];
    const containerFor = (settings: Readonly<Record<string, string>> = {}) => {
      const key = JSON.stringify(settings);
      let container = containers.find((c) => c.key === key && (!options.containerPerInvocation || !c.busy));
      if (container === undefined)
        containers.push((container = { key, handler: build({ ...handlerEnvironment, ...settings }), busy: false }));
      return container;
    };
    const invocationListeners: ((invocation: Invocation) => void)[] = [];
    const invoke = (event: unknown, settings?: Readonly<Record<string, string>>, handOff = false) => {
      const end = Date.now() + invocationSeconds * 1000;
      const container = containerFor(settings);
      container.busy = true;
      const run = container
        .handler(event, { getRemainingTimeInMillis: () => end - Date.now() })
        .finally(() => (container.busy = false));
      for (const l of invocationListeners) l({ event, handOff, run });
      return run;
    };
    // SNS delivers each hand-off to a fresh invocation; terminate() waits for the chain.
    const deliveries: { instanceId: string; run: Promise<unknown>; taken: boolean }[] = [];
    aws.onPublish((topicArn, message) => {
      if (topicArn !== handOffTopicArn) return;
      const parsed = JSON.parse(message) as Record<string, unknown>;
      const run = invoke(snsEvent(parsed), undefined, true);
      run.catch(() => undefined); // awaited by terminate(); this only keeps Node from calling it unhandled first
      deliveries.push({ instanceId: String(parsed['EC2InstanceId']), run, taken: false });
    });
    const localAws = aws;
    const capture = stopCapture;
    const notify = (instanceId: string, transition: 'TERMINATING' | 'LAUNCHING' = 'TERMINATING') => {
      const token = randomUUID();
      localAws.openAction(token);
      // As Auto Scaling: the instance waits on its hook while the notification is out.
      const known = localAws.instances.get(instanceId);
      if (known) known.lifecycleState = transition === 'TERMINATING' ? 'Terminating:Wait' : 'Pending:Wait';
      const notifiedMs = Date.now();
      const event = snsEvent(
        lifecycleMessage({
          EC2InstanceId: instanceId,
          LifecycleActionToken: token,
          AutoScalingGroupName: known?.group ?? groupName,
          LifecycleHookName: transition === 'TERMINATING' ? terminateHook : launchHook,
          LifecycleTransition: `autoscaling:EC2_INSTANCE_${transition}`,
          Time: new Date(notifiedMs).toISOString(),
          NotificationMetadata: JSON.stringify({ clusterName: testAws.clusterName }),
        }),
      );
      return { token, notifiedMs, event };
    };
    return {
      plane,
      admin: a,
      aws: localAws,
      handlerEnvironment,
      proxy,
      notify,
      onHandlerLog: (listener) => void listeners.push(listener),
      onInvocation: (listener) => void invocationListeners.push(listener),
      containers: () => containers.length,
      async addNode(name, instanceId, labels = {}, taints = [], group = groupName) {
        await createKwokNode(a, name, instanceId, { 'eks.amazonaws.com/nodegroup': group, ...labels }, taints);
        const known = localAws.instances.get(instanceId);
        localAws.instances.set(instanceId, {
          privateDnsName: name,
          group,
          lifecycleState: known?.lifecycleState ?? 'InService',
          version: known?.version ?? labels['node-version'] ?? '1',
        });
      },
      launch: (instanceId, o = {}) => invoke(notify(instanceId, 'LAUNCHING').event, o.settings),
      deliver: (event, o = {}) => invoke(event, o.settings),
      async terminate(instanceId, o = {}) {
        const { token, notifiedMs, event } = notify(instanceId);
        let result: unknown = await invoke(event, o.settings);
        let invocations = 1;
        // An invocation publishes its hand-off before it returns, so the next one is known here.
        const waiting = () => deliveries.filter((d) => d.instanceId === instanceId && !d.taken);
        for (let next = waiting(); next.length > 0; next = waiting()) {
          for (const d of next) d.taken = true;
          invocations += next.length;
          result = (await Promise.all(next.map((d) => d.run))).at(-1);
        }
        return { token, notifiedMs, result, invocations };
      },
      async stop() {
        capture();
        await localAws.stop();
        await proxy?.stop();
        await plane.stop();
      },
    };
  } catch (error) {
    stopCapture?.();
    await aws?.stop();
    await proxy?.stop();
    await plane.stop();
    throw error;
  }
}
