// A local stand-in for the AWS APIs the handler calls, reached through the SDK's standard
// endpoint configuration (AWS_ENDPOINT_URL_AUTO_SCALING, AWS_ENDPOINT_URL_EKS,
// AWS_ENDPOINT_URL_SNS, AWS_ENDPOINT_URL_EC2), so the handler runs unpatched. EC2
// DescribeInstances and Auto Scaling DescribeAutoScalingInstances (up to 50 ids a call, as
// AWS) and DescribeAutoScalingGroups (several names, with their tags) answer from `instances`
// and `tags`, which the demo and the benchmark fill as they create nodes (as EC2 and the
// group know); an instance that is not there is in no group. Auto Scaling and SNS speak the Query
// protocol (form body, XML answers); EKS DescribeCluster is REST-JSON. Lifecycle actions
// behave as in AWS: each can be completed once; afterwards the answer is ValidationError
// "No active Lifecycle Action". A Publish (a hand-off) is passed to onPublish, which delivers
// it as SNS would: to a fresh invocation. For the operator commands: EC2's launch template
// versions and images (DescribeLaunchTemplateVersions, DescribeImages, CreateLaunchTemplateVersion
// on the one local template), SSM GetParameter (JSON protocol) from `parameters`, the groups'
// lifecycle hooks from `hooks`, and scale-in (TerminateInstanceInAutoScalingGroup, a lower
// desired capacity), passed to onScaleIn to be played (demo/scale-in.ts). For the soak
// (test/soak/): an action is found by its instance when a call names no token (the reconciler's
// heartbeat, a resumed drain's completion), closeAction ends one as the hook's timeout does,
// DescribeInstances says each instance's state and whether it is Spot and DescribeSpotInstanceRequests
// its request's status, `throttle` refuses a call as the service would, and `beforeAnswer` runs
// once a completion is accepted, before its answer.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRateLimiter, throttledAnswer, type RateLimit, type ThrottledService } from './aws-rate-limits.js';

export interface AwsCall {
  readonly action: string;
  readonly atMs: number;
  readonly params: Readonly<Record<string, string>>;
  /** throttled: refused by a rate limit (LocalAwsOptions.rateLimits), answered as the service would. */
  readonly outcome: 'ok' | 'no-active-action' | 'throttled';
}

/** What EC2 and Auto Scaling know of one instance. */
export interface LocalInstance {
  /** Its private DNS name: the name its node registers under. */
  readonly privateDnsName: string;
  readonly group: string;
  /** Auto Scaling's LifecycleState (InService, Terminating:Wait...). */
  lifecycleState: string;
  /** The launch template version it was launched from (default "1"). */
  version?: string;
  /** Auto Scaling's HealthStatus (default Healthy); SetInstanceHealth sets it. */
  healthStatus?: string;
  /** EC2's instance state (default running); a `terminated` instance is in no group for Auto Scaling. */
  ec2State?: string;
  /** A Spot instance: its request and the request's status code (`fulfilled`, `marked-for-termination`, ...). */
  spot?: { readonly requestId: string; status: string };
}

/** An instance refresh as the local endpoint keeps it; the demo's player moves it along. */
export interface LocalRefresh {
  readonly id: string;
  readonly group: string;
  status: string;
  statusReason?: string;
  percentageComplete: number;
  instancesToUpdate: number;
  readonly desiredVersion: string;
  readonly minHealthyPercentage: number;
  readonly maxHealthyPercentage: number;
  readonly alarms: readonly string[];
}

/** The one launch template every local group uses. */
export const localLaunchTemplate = { id: 'lt-0123456789abcdef0', name: 'demo-workers' };

export interface LocalAws {
  readonly endpointUrl: string;
  readonly calls: AwsCall[];
  readonly instances: Map<string, LocalInstance>;
  readonly refreshes: Map<string, LocalRefresh>;
  /** Group tags (CreateOrUpdateTags / DeleteTags), by group. */
  readonly tags: Map<string, Map<string, string>>;
  /** The deployments whose launch and terminate hooks each group has (DescribeLifecycleHooks). */
  readonly hooks: Map<string, string[]>;
  /** Each group's launch template version (default "1") and desired capacity (default: its instances not terminating). */
  readonly groups: Map<string, { version?: string; desired?: number }>;
  /** The local launch template's versions: version number -> image id (EC2 DescribeLaunchTemplateVersions, CreateLaunchTemplateVersion). */
  readonly templateVersions: Map<string, string>;
  /** Images EC2 describes: image id -> name. */
  readonly images: Map<string, string>;
  /** SSM parameters: name -> value (GetParameter). */
  readonly parameters: Map<string, string>;
  /** Called when Auto Scaling is asked to scale in: TerminateInstanceInAutoScalingGroup, or a lower desired capacity. */
  onScaleIn(listener: (request: ScaleIn) => void): void;
  /** Called when StartInstanceRefresh is answered (the demo's player runs the refresh). */
  onStartInstanceRefresh(listener: (refresh: LocalRefresh) => void): void;
  /**
   * A lifecycle action that may now be completed (what Auto Scaling does before notifying), of
   * `instanceId` when given: a heartbeat or completion naming the instance and no token finds it.
   */
  openAction(token: string, instanceId?: string): void;
  /** Ends an action as its hook's timeout does: afterwards it cannot be completed. False when it was not open. */
  closeAction(token: string): boolean;
  onCall(listener: (call: AwsCall) => void): void;
  /** Receives each message published to the topic (SNS's delivery to the function). */
  onPublish(listener: (topicArn: string, message: string) => void): void;
  stop(): Promise<void>;
}

/** A scale-in asked of the local Auto Scaling: one instance by id, or a count the group picks. */
export interface ScaleIn {
  readonly group: string;
  readonly instanceId?: string;
  readonly count?: number;
  readonly decrement: boolean;
}

export interface ClusterForEks {
  readonly name: string;
  readonly endpoint: string;
  readonly caPem: string;
}

const xmlns = 'http://autoscaling.amazonaws.com/doc/2011-01-01/';
const snsXmlns = 'http://sns.amazonaws.com/doc/2010-03-31/';
const ec2Xmlns = 'http://ec2.amazonaws.com/doc/2016-11-15/';

export interface LocalAwsOptions {
  /** Token buckets per action family (aws-rate-limits.ts); none: nothing is throttled. */
  readonly rateLimits?: readonly RateLimit[];
  /** Throttles a call the rate limits let through when it says so (the soak's planned throttling). */
  readonly throttle?: (service: ThrottledService, action: string) => boolean;
  /** Awaited once a CompleteLifecycleAction is accepted, before it is answered (the soak reads the cluster then). */
  readonly beforeAnswer?: (call: AwsCall) => Promise<void>;
}

/** The Query API a call is for, from its Version (Auto Scaling 2011-01-01, EC2 2016-11-15). */
const serviceOf = (version: string | undefined): ThrottledService | undefined =>
  version === '2016-11-15' ? 'ec2' : version === '2011-01-01' ? 'autoscaling' : undefined;

export async function startLocalAws(cluster: ClusterForEks, options: LocalAwsOptions = {}): Promise<LocalAws> {
  const limiter = options.rateLimits ? createRateLimiter(options.rateLimits) : undefined;
  /** Open lifecycle actions: token -> instance id ('' when not told). */
  const open = new Map<string, string>();
  const calls: AwsCall[] = [];
  const instances = new Map<string, LocalInstance>();
  const refreshes = new Map<string, LocalRefresh>();
  const tags = new Map<string, Map<string, string>>();
  const hooks = new Map<string, string[]>();
  const groupSettings = new Map<string, { version?: string; desired?: number }>();
  const templateVersions = new Map<string, string>();
  const images = new Map<string, string>();
  const parameters = new Map<string, string>();
  const scaleInListeners: ((request: ScaleIn) => void)[] = [];
  const refreshListeners: ((refresh: LocalRefresh) => void)[] = [];
  /** A Query API answer (Auto Scaling's namespace unless told). */
  const ok = (res: ServerResponse, action: string, result: string, requestId: string, namespace = xmlns) => {
    res.writeHead(200, { 'content-type': 'text/xml' });
    res.end(
      `<${action}Response xmlns="${namespace}"><${action}Result>${result}</${action}Result><ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></${action}Response>`,
    );
  };
  const template = (version: string) =>
    `<LaunchTemplate><LaunchTemplateId>${localLaunchTemplate.id}</LaunchTemplateId><LaunchTemplateName>${localLaunchTemplate.name}</LaunchTemplateName><Version>${version}</Version></LaunchTemplate>`;
  const tagsOf = (params: Record<string, string>) => {
    const out: { group: string; key: string; value: string }[] = [];
    for (let i = 1; params[`Tags.member.${i}.Key`] !== undefined; i++) {
      out.push({
        group: params[`Tags.member.${i}.ResourceId`] ?? '',
        key: params[`Tags.member.${i}.Key`]!,
        value: params[`Tags.member.${i}.Value`] ?? '',
      });
    }
    return out;
  };
  const listeners: ((call: AwsCall) => void)[] = [];
  const publishListeners: ((topicArn: string, message: string) => void)[] = [];
  const record = (call: AwsCall) => {
    calls.push(call);
    for (const l of listeners) l(call);
  };

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
    });
  });
  // As AWS's endpoints: an idle connection stays open about a minute, not Node's 5 s (a client
  // reusing it as the server closes it reads ECONNRESET, a failure AWS would not have caused).
  server.keepAliveTimeout = 61_000;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const requestId = randomUUID();

    if (req.method === 'GET' && req.url?.startsWith('/clusters/')) {
      const name = decodeURIComponent(req.url.slice('/clusters/'.length).split('?')[0] ?? '');
      record({ action: 'DescribeCluster', atMs: Date.now(), params: { name }, outcome: 'ok' });
      if (name !== cluster.name) {
        res.writeHead(404, { 'content-type': 'application/json', 'x-amzn-errortype': 'ResourceNotFoundException' });
        res.end(JSON.stringify({ message: `No cluster found for name: ${name}.` }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': requestId });
      res.end(
        JSON.stringify({
          cluster: {
            name,
            status: 'ACTIVE',
            endpoint: cluster.endpoint,
            certificateAuthority: { data: Buffer.from(cluster.caPem).toString('base64') },
          },
        }),
      );
      return;
    }

    if (req.headers['x-amz-target'] === 'AmazonSSM.GetParameter') {
      const name = String((JSON.parse(body) as { Name?: unknown }).Name ?? '');
      record({ action: 'GetParameter', atMs: Date.now(), params: { Name: name }, outcome: 'ok' });
      const value = parameters.get(name);
      res.writeHead(value === undefined ? 400 : 200, {
        'content-type': 'application/x-amz-json-1.1',
        'x-amzn-requestid': requestId,
      });
      res.end(
        JSON.stringify(
          value === undefined
            ? { __type: 'ParameterNotFound', message: '' }
            : { Parameter: { Name: name, Type: 'String', Value: value, Version: 1, DataType: 'aws:ec2:image' } },
        ),
      );
      return;
    }
    const params = Object.fromEntries(new URLSearchParams(body));
    const action = params['Action'];
    if (action !== undefined && (await answerLaunchTemplates(action, params, res, requestId))) return;
    if (action === 'TerminateInstanceInAutoScalingGroup' || action === 'UpdateAutoScalingGroup')
      return answerScaleIn(action, params, res, requestId);
    const service = serviceOf(params['Version']);
    if (service && action && ((limiter && !limiter.admit(service, action)) || options.throttle?.(service, action))) {
      record({ action, atMs: Date.now(), params: {}, outcome: 'throttled' });
      const answer = throttledAnswer(service, requestId);
      res.writeHead(answer.status, { 'content-type': 'text/xml' });
      res.end(answer.body);
      return;
    }
    if (action === 'Publish') {
      const messageId = randomUUID();
      record({
        action,
        atMs: Date.now(),
        params: { TopicArn: params['TopicArn'] ?? '', MessageId: messageId },
        outcome: 'ok',
      });
      ok(res, action, `<MessageId>${messageId}</MessageId>`, requestId, snsXmlns);
      // After the answer, as SNS: the publisher does not wait for the delivery.
      for (const l of publishListeners) l(params['TopicArn'] ?? '', params['Message'] ?? '');
      return;
    }
    if (action === 'DescribeInstances') {
      // The instance-id filter (Filter.1.Value.N), as the handler asks.
      const ids = Object.entries(params)
        .filter(([k]) => /^Filter\.1\.Value\.\d+$/.test(k))
        .map(([, v]) => v);
      record({ action, atMs: Date.now(), params: { InstanceIds: ids.join(',') }, outcome: 'ok' });
      const known = ids.flatMap((id) => {
        const i = instances.get(id);
        if (i === undefined) return [];
        // What the handler reads beyond the name: the state, Spot and its request, the group tag Auto Scaling set.
        const spot = i.spot
          ? `<instanceLifecycle>spot</instanceLifecycle><spotInstanceRequestId>${i.spot.requestId}</spotInstanceRequestId>`
          : '';
        const state = `<instanceState><name>${i.ec2State ?? 'running'}</name></instanceState>`;
        const tag = `<tagSet><item><key>aws:autoscaling:groupName</key><value>${i.group}</value></item></tagSet>`;
        return [
          `<item><instanceId>${id}</instanceId><privateDnsName>${i.privateDnsName}</privateDnsName>${state}${spot}${tag}</item>`,
        ];
      });
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(
        `<DescribeInstancesResponse xmlns="${ec2Xmlns}"><requestId>${requestId}</requestId><reservationSet>${known.length ? `<item><instancesSet>${known.join('')}</instancesSet></item>` : ''}</reservationSet></DescribeInstancesResponse>`,
      );
      return;
    }
    if (action === 'DescribeSpotInstanceRequests') {
      const id = params['Filter.1.Value.1'] ?? '';
      record({ action, atMs: Date.now(), params: { SpotInstanceRequestId: id }, outcome: 'ok' });
      const spot = [...instances.values()].find((i) => i.spot?.requestId === id)?.spot;
      const item = spot
        ? `<item><spotInstanceRequestId>${id}</spotInstanceRequestId><status><code>${spot.status}</code></status></item>`
        : '';
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(
        `<DescribeSpotInstanceRequestsResponse xmlns="${ec2Xmlns}"><requestId>${requestId}</requestId><spotInstanceRequestSet>${item}</spotInstanceRequestSet></DescribeSpotInstanceRequestsResponse>`,
      );
      return;
    }
    if (action === 'DescribeAutoScalingInstances') {
      const ids = members(params, 'InstanceIds');
      record({ action, atMs: Date.now(), params: { InstanceIds: ids.join(',') }, outcome: 'ok' });
      // As AWS: at most 50 ids a call; ids in no group (unknown, terminated) are left out.
      if (ids.length > 50)
        return queryError(
          res,
          400,
          'ValidationError',
          `The number of instance ids (${ids.length}) exceeds the maximum (50)`,
          requestId,
        );
      const known = (ids.length > 0 ? ids : [...instances.keys()]).flatMap((id) => {
        const i = instances.get(id);
        if (i === undefined || i.ec2State === 'terminated') return [];
        return [
          `<member><InstanceId>${id}</InstanceId><AutoScalingGroupName>${i.group}</AutoScalingGroupName><AvailabilityZone>eu-west-1a</AvailabilityZone><LifecycleState>${i.lifecycleState}</LifecycleState><HealthStatus>HEALTHY</HealthStatus>${template(i.version ?? '1')}<ProtectedFromScaleIn>false</ProtectedFromScaleIn></member>`,
        ];
      });
      return ok(res, action, `<AutoScalingInstances>${known.join('')}</AutoScalingInstances>`, requestId);
    }
    if (action === 'DescribeAutoScalingGroups') {
      // Every group named (one name: as before); none named: every group the endpoint knows.
      const named = members(params, 'AutoScalingGroupNames');
      const groups =
        named.length > 0 ? named : [...new Set([...[...instances.values()].map((i) => i.group), ...tags.keys()])];
      record({ action, atMs: Date.now(), params: { group: groups.join(',') }, outcome: 'ok' });
      const groupXml = (group: string) => {
        const inGroup = [...instances].filter(([, i]) => i.group === group && i.ec2State !== 'terminated');
        const instanceXml = inGroup.map(
          ([id, i]) =>
            `<member><InstanceId>${id}</InstanceId><LifecycleState>${i.lifecycleState}</LifecycleState><HealthStatus>${i.healthStatus ?? 'Healthy'}</HealthStatus>${template(i.version ?? '1')}</member>`,
        );
        const desired =
          groupSettings.get(group)?.desired ??
          inGroup.filter(([, i]) => !i.lifecycleState.startsWith('Terminating')).length;
        const tagXml = [...(tags.get(group) ?? [])].map(
          ([k, v]) =>
            `<member><Key>${k}</Key><Value>${v}</Value><ResourceId>${group}</ResourceId><ResourceType>auto-scaling-group</ResourceType><PropagateAtLaunch>false</PropagateAtLaunch></member>`,
        );
        return `<member><AutoScalingGroupName>${group}</AutoScalingGroupName><MinSize>0</MinSize><MaxSize>100</MaxSize><DesiredCapacity>${desired}</DesiredCapacity>${template(groupSettings.get(group)?.version ?? '1')}<Instances>${instanceXml.join('')}</Instances><Tags>${tagXml.join('')}</Tags></member>`;
      };
      return ok(
        res,
        'DescribeAutoScalingGroups',
        `<AutoScalingGroups>${groups
          .filter((g) => g !== '')
          .map(groupXml)
          .join('')}</AutoScalingGroups>`,
        requestId,
      );
    }
    if (action === 'SetInstanceHealth' || action === 'RebootInstances') {
      // Node auto repair: the instance turns Unhealthy (the demo plays the replacement), or EC2 reboots it.
      const id = params['InstanceId'] ?? params['InstanceId.1'] ?? '';
      const instance = instances.get(id);
      record({
        action,
        atMs: Date.now(),
        params: {
          InstanceId: id,
          HealthStatus: params['HealthStatus'] ?? '',
          ShouldRespectGracePeriod: params['ShouldRespectGracePeriod'] ?? '',
        },
        outcome: 'ok',
      });
      if (instance === undefined)
        return queryError(
          res,
          400,
          'ValidationError',
          `Instance Id not found - No instance(s) found with id ${id}`,
          requestId,
        );
      if (action === 'SetInstanceHealth') instance.healthStatus = params['HealthStatus'];
      if (action === 'RebootInstances') {
        res.writeHead(200, { 'content-type': 'text/xml' });
        res.end(
          `<RebootInstancesResponse xmlns="${ec2Xmlns}"><requestId>${requestId}</requestId><return>true</return></RebootInstancesResponse>`,
        );
        return;
      }
      return ok(res, action, '', requestId);
    }
    if (action === 'DescribeLifecycleHooks') {
      // upgrade and migrate find the deployment serving a group in its hooks (`hooks`).
      const group = params['AutoScalingGroupName'] ?? '';
      record({ action, atMs: Date.now(), params: { group }, outcome: 'ok' });
      const hook = (name: string, transition: string) =>
        `<member><LifecycleHookName>${name}</LifecycleHookName><AutoScalingGroupName>${group}</AutoScalingGroupName><LifecycleTransition>autoscaling:EC2_INSTANCE_${transition}</LifecycleTransition><HeartbeatTimeout>300</HeartbeatTimeout><DefaultResult>CONTINUE</DefaultResult></member>`;
      const members = (hooks.get(group) ?? []).flatMap((d) => [
        hook(`${d}-launch`, 'LAUNCHING'),
        hook(`${d}-terminate`, 'TERMINATING'),
      ]);
      return ok(res, action, `<LifecycleHooks>${members.join('')}</LifecycleHooks>`, requestId);
    }
    if (action === 'CreateOrUpdateTags' || action === 'DeleteTags') {
      const asked = tagsOf(params);
      record({
        action,
        atMs: Date.now(),
        params: { tags: asked.map((t) => `${t.group}/${t.key}`).join(',') },
        outcome: 'ok',
      });
      for (const t of asked) {
        const groupTags = tags.get(t.group) ?? new Map<string, string>();
        if (action === 'DeleteTags') groupTags.delete(t.key);
        else groupTags.set(t.key, t.value);
        tags.set(t.group, groupTags);
      }
      return ok(res, action, '', requestId);
    }
    if (action === 'StartInstanceRefresh') {
      const refresh: LocalRefresh = {
        id: randomUUID(),
        group: params['AutoScalingGroupName'] ?? '',
        status: 'Pending',
        percentageComplete: 0,
        instancesToUpdate: 0,
        desiredVersion: params['DesiredConfiguration.LaunchTemplate.Version'] ?? '1',
        minHealthyPercentage: Number(params['Preferences.MinHealthyPercentage'] ?? 90),
        maxHealthyPercentage: Number(params['Preferences.MaxHealthyPercentage'] ?? 100),
        alarms: Object.entries(params)
          .filter(([k]) => k.startsWith('Preferences.AlarmSpecification.Alarms.member.'))
          .map(([, v]) => v),
      };
      refreshes.set(refresh.id, refresh);
      record({ action, atMs: Date.now(), params: { group: refresh.group, id: refresh.id }, outcome: 'ok' });
      ok(res, action, `<InstanceRefreshId>${refresh.id}</InstanceRefreshId>`, requestId);
      for (const l of refreshListeners) l(refresh);
      return;
    }
    if (action === 'DescribeInstanceRefreshes') {
      // The refreshes named (any number), or every refresh of the group.
      const ids = members(params, 'InstanceRefreshIds');
      const list = [...refreshes.values()].filter(
        (r) => r.group === params['AutoScalingGroupName'] && (ids.length === 0 || ids.includes(r.id)),
      );
      record({ action, atMs: Date.now(), params: { id: ids.join(',') }, outcome: 'ok' });
      const member = (r: LocalRefresh) =>
        `<member><InstanceRefreshId>${r.id}</InstanceRefreshId><AutoScalingGroupName>${r.group}</AutoScalingGroupName><Status>${r.status}</Status>${r.statusReason ? `<StatusReason>${r.statusReason}</StatusReason>` : ''}<PercentageComplete>${r.percentageComplete}</PercentageComplete><InstancesToUpdate>${r.instancesToUpdate}</InstancesToUpdate><DesiredConfiguration>${template(r.desiredVersion)}</DesiredConfiguration><Preferences><MinHealthyPercentage>${r.minHealthyPercentage}</MinHealthyPercentage><MaxHealthyPercentage>${r.maxHealthyPercentage}</MaxHealthyPercentage><SkipMatching>true</SkipMatching></Preferences></member>`;
      return ok(res, action, `<InstanceRefreshes>${list.map(member).join('')}</InstanceRefreshes>`, requestId);
    }
    if (action !== 'CompleteLifecycleAction' && action !== 'RecordLifecycleActionHeartbeat') {
      return queryError(
        res,
        400,
        'InvalidAction',
        `local endpoint does not implement ${action ?? '(no Action)'}`,
        requestId,
      );
    }
    // As Auto Scaling: the token names the action, or without one the instance's action does.
    const named = params['LifecycleActionToken'] ?? '';
    const instanceId = params['InstanceId'] ?? '';
    const token = named !== '' ? named : ([...open].find(([, id]) => id !== '' && id === instanceId)?.[0] ?? '');
    if (!open.has(token)) {
      record({ action, atMs: Date.now(), params, outcome: 'no-active-action' });
      return queryError(
        res,
        400,
        'ValidationError',
        `No active Lifecycle Action found with instance ID ${params['InstanceId'] ?? ''}`,
        requestId,
      );
    }
    const call: AwsCall = { action, atMs: Date.now(), params: { ...params, ResolvedToken: token }, outcome: 'ok' };
    if (action === 'CompleteLifecycleAction') {
      // The instance moves on: a terminating one to Terminating:Proceed, a launching one in service.
      const instance = instances.get(open.get(token) || instanceId);
      open.delete(token);
      if (instance)
        instance.lifecycleState = instance.lifecycleState.startsWith('Terminating')
          ? 'Terminating:Proceed'
          : 'InService';
      await options.beforeAnswer?.(call);
    }
    record(call);
    ok(res, action, '', requestId);
  }

  /** EC2's launch template and image calls on the one local template; false when the action is another. */
  async function answerLaunchTemplates(
    action: string,
    params: Record<string, string>,
    res: ServerResponse,
    requestId: string,
  ): Promise<boolean> {
    const ec2 = (name: string, inner: string) => {
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(`<${name}Response xmlns="${ec2Xmlns}"><requestId>${requestId}</requestId>${inner}</${name}Response>`);
    };
    const versionXml = (v: string) =>
      `<item><launchTemplateId>${localLaunchTemplate.id}</launchTemplateId><launchTemplateName>${localLaunchTemplate.name}</launchTemplateName><versionNumber>${v}</versionNumber><launchTemplateData><imageId>${templateVersions.get(v) ?? ''}</imageId><instanceType>m7i.large</instanceType></launchTemplateData></item>`;
    const numbers = () => [...templateVersions.keys()].map(Number).sort((x, y) => x - y);
    if (action === 'DescribeLaunchTemplateVersions') {
      const asked = params['LaunchTemplateVersion.1'] ?? '$Default';
      const v =
        asked === '$Latest' ? String(numbers().at(-1) ?? 1) : asked === '$Default' ? String(numbers()[0] ?? 1) : asked;
      record({ action, atMs: Date.now(), params: { version: asked }, outcome: 'ok' });
      ec2(
        action,
        `<launchTemplateVersionSet>${templateVersions.has(v) ? versionXml(v) : ''}</launchTemplateVersionSet>`,
      );
      return true;
    }
    if (action === 'DescribeImages') {
      const id = params['Filter.1.Value.1'] ?? '';
      record({ action, atMs: Date.now(), params: { ImageId: id }, outcome: 'ok' });
      const name = images.get(id);
      ec2(
        action,
        `<imagesSet>${name === undefined ? '' : `<item><imageId>${id}</imageId><name>${name}</name><architecture>x86_64</architecture></item>`}</imagesSet>`,
      );
      return true;
    }
    if (action === 'CreateLaunchTemplateVersion') {
      const { Action: _a, Version: _v, ...asked } = params;
      record({ action, atMs: Date.now(), params: asked, outcome: 'ok' });
      const v = String((numbers().at(-1) ?? 0) + 1);
      templateVersions.set(
        v,
        params['LaunchTemplateData.ImageId'] ?? templateVersions.get(params['SourceVersion'] ?? '') ?? '',
      );
      ec2(
        action,
        `<launchTemplateVersion><launchTemplateId>${localLaunchTemplate.id}</launchTemplateId><versionNumber>${v}</versionNumber></launchTemplateVersion>`,
      );
      return true;
    }
    return false;
  }

  /** A scale-in: answered at once, as Auto Scaling does; the listeners play it (hooks, terminations). */
  function answerScaleIn(action: string, params: Record<string, string>, res: ServerResponse, requestId: string): void {
    const { Action: _a, Version: _v, ...asked } = params;
    record({ action, atMs: Date.now(), params: asked, outcome: 'ok' });
    if (action === 'TerminateInstanceInAutoScalingGroup') {
      const instanceId = params['InstanceId'] ?? '';
      const instance = instances.get(instanceId);
      if (instance === undefined)
        return queryError(
          res,
          400,
          'ValidationError',
          `Instance Id not found - No managed instance found for instance ID: ${instanceId}`,
          requestId,
        );
      const decrement = params['ShouldDecrementDesiredCapacity'] === 'true';
      const settings = groupSettings.get(instance.group) ?? {};
      if (decrement && settings.desired !== undefined) settings.desired -= 1;
      groupSettings.set(instance.group, settings);
      instance.lifecycleState = 'Terminating';
      const activity = `<Activity><ActivityId>${randomUUID()}</ActivityId><AutoScalingGroupName>${instance.group}</AutoScalingGroupName><StatusCode>InProgress</StatusCode><Progress>0</Progress><Cause>terminate ${instanceId}</Cause><StartTime>${new Date().toISOString()}</StartTime></Activity>`;
      ok(res, action, activity, requestId);
      for (const l of scaleInListeners) l({ group: instance.group, instanceId, decrement });
      return;
    }
    const group = params['AutoScalingGroupName'] ?? '';
    const live = [...instances.values()].filter(
      (i) => i.group === group && !i.lifecycleState.startsWith('Terminating'),
    ).length;
    const settings = groupSettings.get(group) ?? {};
    const desired =
      params['DesiredCapacity'] === undefined ? (settings.desired ?? live) : Number(params['DesiredCapacity']);
    groupSettings.set(group, { ...settings, desired });
    ok(res, action, '', requestId);
    if (desired < live) for (const l of scaleInListeners) l({ group, count: live - desired, decrement: true });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpointUrl: `http://127.0.0.1:${port}`,
    calls,
    instances,
    refreshes,
    tags,
    hooks,
    groups: groupSettings,
    templateVersions,
    images,
    parameters,
    onScaleIn: (listener) => void scaleInListeners.push(listener),
    onStartInstanceRefresh: (listener) => void refreshListeners.push(listener),
    openAction: (token, instanceId = '') => void open.set(token, instanceId),
    closeAction: (token) => open.delete(token),
    onCall: (listener) => void listeners.push(listener),
    onPublish: (listener) => void publishListeners.push(listener),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The values of a Query list parameter (`InstanceIds.member.1`, `.member.2`, ...), in order. */
function members(params: Readonly<Record<string, string>>, name: string): string[] {
  const out: string[] = [];
  for (let i = 1; params[`${name}.member.${i}`] !== undefined; i++) out.push(params[`${name}.member.${i}`]!);
  return out;
}

function queryError(res: ServerResponse, status: number, code: string, message: string, requestId: string): void {
  res.writeHead(status, { 'content-type': 'text/xml' });
  res.end(
    `<ErrorResponse xmlns="${xmlns}"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`,
  );
}

/** The environment that points the handler's SDK clients at the local endpoint. */
export function localAwsEnvironment(aws: LocalAws): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_AUTO_SCALING: aws.endpointUrl,
    AWS_ENDPOINT_URL_EKS: aws.endpointUrl,
    AWS_ENDPOINT_URL_SNS: aws.endpointUrl,
    AWS_ENDPOINT_URL_EC2: aws.endpointUrl,
    AWS_ENDPOINT_URL_SSM: aws.endpointUrl,
  };
}
