// Runs the real handler (lambda/runtime.ts, exactly what the Lambda runs) against the local
// plane in EKS mode: DescribeCluster and the Auto Scaling calls are answered at the SDK
// edge, the token is minted by the handler and checked by the plane's webhook.
import {
  AutoScalingClient,
  AutoScalingServiceException,
  CompleteLifecycleActionCommand,
  DeleteTagsCommand,
  DescribeAutoScalingGroupsCommand,
  DescribeAutoScalingInstancesCommand,
  DescribeInstanceRefreshesCommand,
  RecordLifecycleActionHeartbeatCommand,
  SetInstanceHealthCommand,
} from '@aws-sdk/client-auto-scaling';
import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import { DescribeClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { mockClient } from 'aws-sdk-client-mock';
import { randomUUID } from 'node:crypto';
import { createRuntime, type LambdaHandler } from '../../lambda/runtime.js';
import { lifecycleMessage, snsEvent } from '../fixtures/notifications.js';
import { scheduledEvent as scheduledEventAt } from '../fixtures/deliveries.js';
import { describeGroupsXml, groupNamesOf } from '../fakes/auto-scaling-xml.js';
import { captureHandlerLogs } from './handler-logs.js';
import type { PlaneInfo } from './plane/plane.js';
import { testAws } from './plane/token-webhook.js';
import { admin } from './kube.js';
import type { InstanceDirectory } from '../../lambda/shared/aws-ports.js';

export interface Completion {
  readonly instanceId: string;
  readonly token: string;
  readonly result: string;
  readonly atMs: number;
  readonly outcome: 'completed' | 'already-completed';
}

export interface DrainerOptions {
  readonly drainTimeoutSeconds?: number;
  readonly loadBalancerDelaySeconds?: number;
  readonly launchTimeoutSeconds?: number;
  /** Hand long drains on through a (stubbed) SNS topic, as deployed. */
  readonly handOff?: boolean;
  readonly heartbeatTimeoutSeconds?: number;
  readonly deadlinePolicy?: 'force' | 'leave' | 'retain';
  readonly blockedReportSeconds?: number;
  /** MIN_EVICTION_WINDOW_SECONDS; 0 unless a scenario is about the window, so deadlines stay short. */
  readonly minEvictionWindowSeconds?: number;
  /** Where DescribeCluster says the API server is (a fault-injecting proxy, say). */
  readonly endpoint?: string;
  /** Connect with this kubeconfig (KUBECONFIG_PATH) instead of as on EKS. */
  readonly kubeconfig?: string;
  /** CORDON_DOOMED_SIBLINGS (default: the handler's, true). */
  readonly cordonDoomedSiblings?: boolean;
  /** RECONCILE_MARKS (default: the handler's, true). */
  readonly reconcileMarks?: boolean;
  /** DEPLOYMENT_NAME (default: the handler's). */
  readonly deploymentName?: string;
  /**
   * Read the load balancers at this local ELB stand-in (test/fakes/elb-stub.ts) through
   * AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING(_V2), as deployed (WAIT_FOR_TARGETS); without it
   * the fixed LOAD_BALANCER_DELAY_SECONDS applies, as in the scenarios written before it.
   */
  readonly loadBalancers?: {
    readonly url: string;
    readonly minWaitSeconds?: number;
    readonly maxWaitSeconds?: number;
    /** LOAD_BALANCER_TAGS: the opt-in tag scan. */ readonly tags?: string;
  };
  /** MODE (default: the handler's, enforce). */
  readonly mode?: 'enforce' | 'observe';
  /** More variables, as a scenario needs them (TERMINATION_DEFERRAL_MAX_SECONDS, ...). */
  readonly env?: Readonly<Record<string, string>>;
  /** WAIT_FOR_VOLUME_DETACH (default: the handler's, true). */
  readonly waitForVolumeDetach?: boolean;
  /** REPAIR (default: the handler's, off). */
  readonly repair?: string;
}

export interface Drainer {
  readonly completions: Completion[];
  /** Log lines the handler wrote (Powertools JSON), parsed. */
  readonly logs: Record<string, unknown>[];
  terminate(instanceId: string, options?: TerminateOptions): Promise<unknown>;
  /** Hand-off messages the handler published, in order. */
  readonly handOffs: Record<string, unknown>[];
  /** Heartbeats the handler recorded. */
  readonly heartbeats: { token: string; atMs: number }[];
  /** Delivers one published hand-off (as SNS would) to a fresh invocation. */
  deliver(message: Record<string, unknown>, options?: { remainingMs?: number; requestId?: string }): Promise<unknown>;
  /** The next SNS Publish never answers (the invocation dies there, as in a crash or timeout). */
  hangNextPublish(): { release(): void };
  /** Runs the handler on any event (EventBridge, SQS, ...); its lifecycle token is made active first. */
  invoke(
    event: unknown,
    options?: { remainingMs?: number; activeToken?: string; activeInstance?: string; requestId?: string },
  ): Promise<unknown>;
  /** Runs one reconcile pass: the Scheduled Event EventBridge sends. */
  reconcile(): Promise<unknown>;
  /** Ends a lifecycle action as Auto Scaling would (completed elsewhere, or timed out). */
  expire(token: string): void;
  /** Auto Scaling's LifecycleState per instance, where a scenario sets it (else InService, or Terminating:Wait for `terminating`). */
  readonly states: Map<string, string>;
  /** Tags Auto Scaling was asked to delete, per group. */
  readonly deletedTags: { group: string; key: string }[];
  /** Which group each instance is in, as DescribeAutoScalingInstances answers. */
  readonly groups: Map<string, string>;
  /** Instances in Terminating:Wait, as DescribeAutoScalingGroups lists them (with `groups`). */
  readonly terminating: Set<string>;
  /**
   * EC2's private DNS name per instance, where a scenario sets it (null: EC2 gives none).
   * Otherwise the stand-in answers as EC2 on EKS would: the name of the node whose
   * providerID names the instance (the kubelet registers under the private DNS name).
   */
  readonly ec2Names: Map<string, string | null>;
  /** Instance ids EC2 was asked about, per call. */
  readonly ec2Calls: string[][];
  /** Instances EC2 runs as Spot, with their Spot request's status (DescribeSpotInstanceRequests); every other is On-Demand. */
  readonly spotInstances: Map<string, string>;
  /** EC2's state and Auto Scaling group tag per instance (DescribeInstances), where a scenario sets them. */
  readonly runStates: Map<string, { state: string; group?: string }>;
  /** SetInstanceHealth Unhealthy calls, by instance, in order (the group's health status follows). */
  readonly unhealthy: string[];
  /** Each instance's HealthStatus as DescribeAutoScalingGroups lists it (default Healthy). */
  readonly health: Map<string, string>;
  /** EC2 RebootInstances calls, by instance. */
  readonly reboots: string[];
  /** Each instance's launch template version, as the group reports it (default "1"). */
  readonly versions: Map<string, string>;
  /** Instance refreshes, as DescribeInstanceRefreshes answers (desired version, status). */
  readonly refreshes: Map<string, { status: string; desiredVersion: string }>;
  /** The group's tags (the strategy tag `upgrade --strategy minimal` sets). */
  readonly groupTags: Map<string, string>;
  /** Sends the EC2_INSTANCE_LAUNCHING notification of the launch hook. */
  launch(instanceId: string, options?: Pick<TerminateOptions, 'origin' | 'destination'>): Promise<unknown>;
  restore(): void;
}

export interface TerminateOptions {
  readonly remainingMs?: number;
  readonly token?: string;
  /** Lambda's request id: the same in Lambda's own retry of an invocation. */
  readonly requestId?: string;
  /** The notification's Time, when it is not now (a notification that waited in a queue). */
  readonly time?: Date;
  /** The token is not one Auto Scaling has (a forged or made-up notification). */
  readonly unknownToAutoScaling?: boolean;
  /** Warm pools: `EC2` -> `WarmPool` into the pool, `WarmPool` -> `AutoScalingGroup` out of it. */
  readonly origin?: string;
  readonly destination?: string;
}

/** EventBridge's scheduled event, as the construct's reconcile rule sends it, now. */
export const scheduledEvent = (): Record<string, unknown> =>
  scheduledEventAt(new Date().toISOString(), { account: testAws.accountId, region: testAws.region, id: randomUUID() });

/** The status of the first (usually only) record of a handler result. */
export const statusOf = (result: unknown): string => (result as { records: { status: string }[] }).records[0]!.status;

export const autoScalingGroupName = 'workers';
export const terminateHookName = 'workers-terminate';
export const launchHookName = 'workers-launch';
const handOffTopicArn = `arn:aws:sns:${testAws.region}:${testAws.accountId}:graceful-node-termination`;

export function startDrainer(plane: PlaneInfo, options: DrainerOptions = {}): Drainer {
  const completions: Completion[] = [];
  /** Active lifecycle actions: token -> instance id ('' when a test did not say). */
  const active = new Map<string, string>();
  /** The action a call names: by its token, or (no token) the active one of its instance. */
  const actionOf = (input: { LifecycleActionToken?: string; InstanceId?: string }): string | undefined => {
    if (input.LifecycleActionToken)
      return active.has(input.LifecycleActionToken) ? input.LifecycleActionToken : undefined;
    return [...active].find(([, id]) => id === input.InstanceId)?.[0];
  };
  const noActiveAction = (instanceId: string | undefined) =>
    new AutoScalingServiceException({
      name: 'ValidationError',
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
      message: `No active Lifecycle Action found with instance ID ${instanceId}`,
    });
  const eks = mockClient(EKSClient);
  eks.on(DescribeClusterCommand, { name: testAws.clusterName }).resolves({
    cluster: {
      name: testAws.clusterName,
      status: 'ACTIVE',
      endpoint: options.endpoint ?? plane.server,
      certificateAuthority: { data: Buffer.from(plane.caPem).toString('base64') },
    },
  });
  const asg = mockClient(AutoScalingClient);
  // Behaves like Auto Scaling: an action can be completed once; afterwards (or for an
  // unknown token) the answer is the ValidationError the handler must take as "done".
  asg.on(CompleteLifecycleActionCommand).callsFake(async (input) => {
    const token = actionOf(input);
    if (token === undefined) {
      completions.push({
        instanceId: input.InstanceId,
        token: String(input.LifecycleActionToken),
        result: input.LifecycleActionResult,
        atMs: Date.now(),
        outcome: 'already-completed',
      });
      throw noActiveAction(input.InstanceId);
    }
    active.delete(token);
    completions.push({
      instanceId: input.InstanceId,
      token,
      result: input.LifecycleActionResult,
      atMs: Date.now(),
      outcome: 'completed',
    });
    return {};
  });

  const groups = new Map<string, string>();
  const terminating = new Set<string>();
  const states = new Map<string, string>();
  const stateOf = (id: string) => states.get(id) ?? (terminating.has(id) ? 'Terminating:Wait' : 'InService');
  asg.on(DescribeAutoScalingInstancesCommand).callsFake(async (input) => ({
    AutoScalingInstances: (input.InstanceIds ?? []).flatMap((id: string) => {
      const group = groups.get(id);
      return group ? [{ InstanceId: id, AutoScalingGroupName: group, LifecycleState: stateOf(id) }] : [];
    }),
  }));

  const versions = new Map<string, string>();
  const health = new Map<string, string>();
  const unhealthy: string[] = [];
  const reboots: string[] = [];
  // As Auto Scaling: the instance's health status becomes Unhealthy (the grace period is the scenario's to play).
  asg.on(SetInstanceHealthCommand).callsFake(async (input) => {
    if (!groups.has(String(input.InstanceId)))
      throw new AutoScalingServiceException({
        name: 'ValidationError',
        $fault: 'client',
        $metadata: { httpStatusCode: 400 },
        message: 'Instance Id not found',
      });
    // What the drainer must always ask: Unhealthy, within the group's grace period rules.
    if (input.HealthStatus !== 'Unhealthy' || input.ShouldRespectGracePeriod !== true)
      throw new Error(`unexpected SetInstanceHealth ${JSON.stringify(input)}`);
    unhealthy.push(String(input.InstanceId));
    health.set(String(input.InstanceId), String(input.HealthStatus));
    return {};
  });
  const refreshes = new Map<string, { status: string; desiredVersion: string }>();
  const groupTags = new Map<string, string>();
  const template = { LaunchTemplateId: 'lt-0123456789abcdef0', LaunchTemplateName: 'workers' };
  const describeGroups = (names: readonly string[]) =>
    names.map((group: string) => ({
      AutoScalingGroupName: group,
      Instances: [...groups]
        .filter(([, g]) => g === group)
        .map(([id]) => ({
          InstanceId: id,
          LifecycleState: stateOf(id),
          HealthStatus: health.get(id) ?? 'Healthy',
          LaunchTemplate: { ...template, Version: versions.get(id) ?? '1' },
        })),
      LaunchTemplate: { ...template, Version: '1' },
      Tags:
        group === autoScalingGroupName
          ? [...groupTags].map(([Key, Value]) => ({
              Key,
              Value,
              ResourceId: group,
              ResourceType: 'auto-scaling-group',
            }))
          : [],
    }));
  asg
    .on(DescribeAutoScalingGroupsCommand)
    .callsFake(async (input) => ({ AutoScalingGroups: describeGroups(input.AutoScalingGroupNames ?? []) }));
  // The handler's lean group reads (group-reads.ts) get the same groups as Query XML.
  const autoScalingQuery = {
    call: async (action: string, params: Readonly<Record<string, string>>) => {
      if (action !== 'DescribeAutoScalingGroups') throw new Error(`unexpected Auto Scaling Query call ${action}`);
      return describeGroupsXml(describeGroups(groupNamesOf(params)));
    },
  };
  const deletedTags: { group: string; key: string }[] = [];
  asg.on(DeleteTagsCommand).callsFake(async (input) => {
    for (const t of input.Tags ?? []) {
      deletedTags.push({ group: String(t.ResourceId), key: String(t.Key) });
      if (t.ResourceId === autoScalingGroupName) groupTags.delete(String(t.Key));
    }
    return {};
  });
  asg.on(DescribeInstanceRefreshesCommand).callsFake(async (input) => ({
    InstanceRefreshes: (input.InstanceRefreshIds ?? []).flatMap((id: string) => {
      const refresh = refreshes.get(id);
      return refresh
        ? [
            {
              InstanceRefreshId: id,
              Status: refresh.status,
              DesiredConfiguration: {
                LaunchTemplate: { LaunchTemplateId: template.LaunchTemplateId, Version: refresh.desiredVersion },
              },
            },
          ]
        : [];
    }),
  }));

  // EC2 has no stand-in in this harness: the runtime's one test seam (RuntimeOverrides).
  const ec2Names = new Map<string, string | null>();
  const ec2Calls: string[][] = [];
  const spotInstances = new Map<string, string>();
  const runStates = new Map<string, { state: string; group?: string }>();
  const nodeAdmin = admin(plane);
  const instanceDirectory: InstanceDirectory = {
    async privateDnsNames(ids) {
      ec2Calls.push([...ids]);
      const unknown = ids.filter((id) => !ec2Names.has(id));
      const nodes = unknown.length > 0 ? (await nodeAdmin.core.listNode()).items : [];
      const names = new Map<string, string>();
      for (const id of ids) {
        const name = ec2Names.has(id)
          ? ec2Names.get(id)
          : nodes.find((n) => n.spec?.providerID?.endsWith(`/${id}`))?.metadata?.name;
        if (name) names.set(id, name);
      }
      return names;
    },
    async purchase(id) {
      ec2Calls.push([id]);
      return spotInstances.has(id)
        ? { lifecycle: 'spot', spotRequestId: `sir-${id}` }
        : { lifecycle: 'on-demand', spotRequestId: undefined };
    },
    async spotRequestStatus(requestId) {
      return spotInstances.get(requestId.replace(/^sir-/, ''));
    },
    async runStates(ids) {
      ec2Calls.push([...ids]);
      return new Map(ids.flatMap((id) => (runStates.has(id) ? [[id, runStates.get(id)!] as const] : [])));
    },
  };

  const heartbeats: { token: string; atMs: number }[] = [];
  asg.on(RecordLifecycleActionHeartbeatCommand).callsFake(async (input) => {
    const token = actionOf(input);
    if (token === undefined) throw noActiveAction(input.InstanceId);
    heartbeats.push({ token, atMs: Date.now() });
    return {};
  });
  const handOffs: Record<string, unknown>[] = [];
  const sns = mockClient(SNSClient);
  let hang: Promise<void> | undefined;
  sns.on(PublishCommand, { TopicArn: handOffTopicArn }).callsFake(async (input) => {
    if (hang) {
      const waiting = hang;
      hang = undefined;
      await waiting;
      throw new Error('the invocation died while publishing (released by the test)');
    }
    handOffs.push(JSON.parse(String(input.Message)) as Record<string, unknown>);
    return { MessageId: randomUUID() };
  });

  const logs: Record<string, unknown>[] = [];
  const stopCapture = captureHandlerLogs((entry) => logs.push(entry), options.deploymentName);

  // The default credential chain picks these up: the webhook knows the same test key.
  process.env['AWS_ACCESS_KEY_ID'] = testAws.accessKeyId;
  process.env['AWS_SECRET_ACCESS_KEY'] = testAws.secretAccessKey;
  const handler: LambdaHandler = createRuntime(
    {
      CLUSTER_NAME: testAws.clusterName,
      AUTO_SCALING_GROUP_NAMES: autoScalingGroupName,
      LIFECYCLE_HOOK_NAMES: `${terminateHookName},${launchHookName}`,
      DRAIN_TIMEOUT_SECONDS: String(options.drainTimeoutSeconds ?? 60),
      LOAD_BALANCER_DELAY_SECONDS: String(options.loadBalancerDelaySeconds ?? 0),
      INVOCATION_MARGIN_SECONDS: '5',
      LAUNCH_TIMEOUT_SECONDS: String(options.launchTimeoutSeconds ?? 60),
      HEARTBEAT_TIMEOUT_SECONDS: String(options.heartbeatTimeoutSeconds ?? 1800),
      DEADLINE_POLICY: options.deadlinePolicy ?? 'force',
      BLOCKED_REPORT_SECONDS: String(options.blockedReportSeconds ?? 120),
      MIN_EVICTION_WINDOW_SECONDS: String(options.minEvictionWindowSeconds ?? 0),
      ...(options.handOff ? { HAND_OFF_TOPIC_ARN: handOffTopicArn } : {}),
      ...(options.kubeconfig ? { KUBECONFIG_PATH: options.kubeconfig } : {}),
      ...(options.cordonDoomedSiblings !== undefined
        ? { CORDON_DOOMED_SIBLINGS: String(options.cordonDoomedSiblings) }
        : {}),
      ...(options.reconcileMarks !== undefined ? { RECONCILE_MARKS: String(options.reconcileMarks) } : {}),
      ...(options.deploymentName !== undefined ? { DEPLOYMENT_NAME: options.deploymentName } : {}),
      ...(options.waitForVolumeDetach !== undefined
        ? { WAIT_FOR_VOLUME_DETACH: String(options.waitForVolumeDetach) }
        : {}),
      ...(options.mode !== undefined ? { MODE: options.mode } : {}),
      ...(options.repair !== undefined ? { REPAIR: options.repair } : {}),
      ...(options.loadBalancers
        ? {
            WAIT_FOR_TARGETS: 'true',
            AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2: options.loadBalancers.url,
            AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING: options.loadBalancers.url,
            LOAD_BALANCER_MIN_WAIT_SECONDS: String(options.loadBalancers.minWaitSeconds ?? 5),
            LOAD_BALANCER_MAX_WAIT_SECONDS: String(options.loadBalancers.maxWaitSeconds ?? 300),
            ...(options.loadBalancers.tags !== undefined ? { LOAD_BALANCER_TAGS: options.loadBalancers.tags } : {}),
          }
        : { WAIT_FOR_TARGETS: 'false' }),
      AWS_REGION: testAws.region,
      ...options.env,
    },
    { instanceDirectory, reboot: async (id) => void reboots.push(id), autoScalingQuery },
  );

  /** Sends a notification shaped as Auto Scaling sends it and runs the handler on it. */
  const notify = (
    instanceId: string,
    transition: 'LAUNCHING' | 'TERMINATING',
    token: string,
    remainingMs: number,
    o: Omit<TerminateOptions, 'token' | 'remainingMs'> = {},
  ) => {
    if (!o.unknownToAutoScaling) active.set(token, instanceId);
    const event = snsEvent(
      lifecycleMessage({
        EC2InstanceId: instanceId,
        LifecycleActionToken: token,
        AutoScalingGroupName: autoScalingGroupName,
        LifecycleHookName: transition === 'LAUNCHING' ? launchHookName : terminateHookName,
        LifecycleTransition: `autoscaling:EC2_INSTANCE_${transition}`,
        Time: (o.time ?? new Date()).toISOString(),
        NotificationMetadata: JSON.stringify({ clusterName: testAws.clusterName }),
        ...(o.origin ? { Origin: o.origin } : {}),
        ...(o.destination ? { Destination: o.destination } : {}),
      }),
    );
    const end = Date.now() + remainingMs;
    return handler(event, {
      getRemainingTimeInMillis: () => end - Date.now(),
      awsRequestId: o.requestId ?? randomUUID(),
    });
  };

  /** Runs the handler on any event, as Lambda would, with its own request id unless given. */
  const invoke = (
    event: unknown,
    o: { remainingMs?: number; activeToken?: string; activeInstance?: string; requestId?: string } = {},
  ) => {
    if (o.activeToken) active.set(o.activeToken, o.activeInstance ?? '');
    const end = Date.now() + (o.remainingMs ?? 900_000);
    return handler(event, {
      getRemainingTimeInMillis: () => end - Date.now(),
      awsRequestId: o.requestId ?? randomUUID(),
    });
  };

  return {
    completions,
    logs,
    handOffs,
    heartbeats,
    deliver: (message, o = {}) => invoke(snsEvent(message), o),
    groups,
    terminating,
    ec2Names,
    ec2Calls,
    spotInstances,
    runStates,
    versions,
    unhealthy,
    health,
    reboots,
    refreshes,
    groupTags,
    states,
    deletedTags,
    invoke,
    reconcile: () => invoke(scheduledEvent()),
    expire: (token) => void active.delete(token),
    hangNextPublish() {
      let release: () => void = () => {};
      hang = new Promise<void>((resolve) => (release = resolve));
      return { release: () => release() };
    },
    terminate: (instanceId, o = {}) =>
      notify(instanceId, 'TERMINATING', o.token ?? randomUUID(), o.remainingMs ?? 900_000, o),
    launch: (instanceId, o = {}) => notify(instanceId, 'LAUNCHING', randomUUID(), 900_000, o),
    restore() {
      stopCapture();
      eks.restore();
      asg.restore();
      sns.restore();
    },
  };
}
