// A local stand-in for the AWS APIs the handler calls, reached through the SDK's standard
// endpoint configuration (AWS_ENDPOINT_URL_AUTO_SCALING, AWS_ENDPOINT_URL_EKS,
// AWS_ENDPOINT_URL_SNS, AWS_ENDPOINT_URL_EC2), so the handler runs unpatched. EC2
// DescribeInstances and Auto Scaling DescribeAutoScalingGroups answer from `instances`,
// which the demo and the benchmark fill as they create nodes (as EC2 and the group know). Auto Scaling and SNS speak the Query
// protocol (form body, XML answers); EKS DescribeCluster is REST-JSON. Lifecycle actions
// behave as in AWS: each can be completed once; afterwards the answer is ValidationError
// "No active Lifecycle Action". A Publish (a hand-off) is passed to onPublish, which delivers
// it as SNS would: to a fresh invocation.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface AwsCall {
  readonly action: 'CompleteLifecycleAction' | 'RecordLifecycleActionHeartbeat' | 'DescribeCluster' | 'Publish' | 'DescribeInstances' | 'DescribeAutoScalingGroups';
  readonly atMs: number;
  readonly params: Readonly<Record<string, string>>;
  readonly outcome: 'ok' | 'no-active-action';
}

/** What EC2 and Auto Scaling know of one instance. */
export interface LocalInstance {
  /** Its private DNS name: the name its node registers under. */
  readonly privateDnsName: string;
  readonly group: string;
  /** Auto Scaling's LifecycleState (InService, Terminating:Wait...). */
  lifecycleState: string;
}

export interface LocalAws {
  readonly endpointUrl: string;
  readonly calls: AwsCall[];
  readonly instances: Map<string, LocalInstance>;
  /** A lifecycle action that may now be completed (what Auto Scaling does before notifying). */
  openAction(token: string): void;
  onCall(listener: (call: AwsCall) => void): void;
  /** Receives each message published to the topic (SNS's delivery to the function). */
  onPublish(listener: (topicArn: string, message: string) => void): void;
  stop(): Promise<void>;
}

export interface ClusterForEks {
  readonly name: string;
  readonly endpoint: string;
  readonly caPem: string;
}

const xmlns = 'http://autoscaling.amazonaws.com/doc/2011-01-01/';
const snsXmlns = 'http://sns.amazonaws.com/doc/2010-03-31/';
const ec2Xmlns = 'http://ec2.amazonaws.com/doc/2016-11-15/';

export async function startLocalAws(cluster: ClusterForEks): Promise<LocalAws> {
  const open = new Set<string>();
  const calls: AwsCall[] = [];
  const instances = new Map<string, LocalInstance>();
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
          cluster: { name, status: 'ACTIVE', endpoint: cluster.endpoint, certificateAuthority: { data: Buffer.from(cluster.caPem).toString('base64') } },
        }),
      );
      return;
    }

    const params = Object.fromEntries(new URLSearchParams(body));
    const action = params['Action'];
    if (action === 'Publish') {
      const messageId = randomUUID();
      record({ action, atMs: Date.now(), params: { TopicArn: params['TopicArn'] ?? '', MessageId: messageId }, outcome: 'ok' });
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(`<PublishResponse xmlns="${snsXmlns}"><PublishResult><MessageId>${messageId}</MessageId></PublishResult><ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></PublishResponse>`);
      // After the answer, as SNS: the publisher does not wait for the delivery.
      for (const l of publishListeners) l(params['TopicArn'] ?? '', params['Message'] ?? '');
      return;
    }
    if (action === 'DescribeInstances') {
      // The instance-id filter (Filter.1.Value.N), as the handler asks.
      const ids = Object.entries(params).filter(([k]) => /^Filter\.1\.Value\.\d+$/.test(k)).map(([, v]) => v);
      record({ action, atMs: Date.now(), params: { InstanceIds: ids.join(',') }, outcome: 'ok' });
      const known = ids.flatMap((id) => {
        const i = instances.get(id);
        return i ? [`<item><instanceId>${id}</instanceId><privateDnsName>${i.privateDnsName}</privateDnsName></item>`] : [];
      });
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(`<DescribeInstancesResponse xmlns="${ec2Xmlns}"><requestId>${requestId}</requestId><reservationSet>${known.length ? `<item><instancesSet>${known.join('')}</instancesSet></item>` : ''}</reservationSet></DescribeInstancesResponse>`);
      return;
    }
    if (action === 'DescribeAutoScalingGroups') {
      const group = params['AutoScalingGroupNames.member.1'] ?? '';
      record({ action, atMs: Date.now(), params: { group }, outcome: 'ok' });
      const members = [...instances].filter(([, i]) => i.group === group).map(([id, i]) => `<member><InstanceId>${id}</InstanceId><LifecycleState>${i.lifecycleState}</LifecycleState></member>`);
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(`<DescribeAutoScalingGroupsResponse xmlns="${xmlns}"><DescribeAutoScalingGroupsResult><AutoScalingGroups>${members.length || group ? `<member><AutoScalingGroupName>${group}</AutoScalingGroupName><Instances>${members.join('')}</Instances></member>` : ''}</AutoScalingGroups></DescribeAutoScalingGroupsResult><ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></DescribeAutoScalingGroupsResponse>`);
      return;
    }
    if (action !== 'CompleteLifecycleAction' && action !== 'RecordLifecycleActionHeartbeat') {
      return queryError(res, 400, 'InvalidAction', `local endpoint does not implement ${action ?? '(no Action)'}`, requestId);
    }
    const token = params['LifecycleActionToken'] ?? '';
    if (!open.has(token)) {
      record({ action, atMs: Date.now(), params, outcome: 'no-active-action' });
      return queryError(res, 400, 'ValidationError', `No active Lifecycle Action found with instance ID ${params['InstanceId'] ?? ''}`, requestId);
    }
    if (action === 'CompleteLifecycleAction') {
      open.delete(token);
      // The instance moves on: a terminating one to Terminating:Proceed, a launching one in service.
      const instance = instances.get(params['InstanceId'] ?? '');
      if (instance) instance.lifecycleState = instance.lifecycleState.startsWith('Terminating') ? 'Terminating:Proceed' : 'InService';
    }
    record({ action, atMs: Date.now(), params, outcome: 'ok' });
    res.writeHead(200, { 'content-type': 'text/xml' });
    res.end(`<${action}Response xmlns="${xmlns}"><${action}Result/><ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></${action}Response>`);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpointUrl: `http://127.0.0.1:${port}`,
    calls,
    instances,
    openAction: (token) => void open.add(token),
    onCall: (listener) => void listeners.push(listener),
    onPublish: (listener) => void publishListeners.push(listener),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function queryError(res: ServerResponse, status: number, code: string, message: string, requestId: string): void {
  res.writeHead(status, { 'content-type': 'text/xml' });
  res.end(`<ErrorResponse xmlns="${xmlns}"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`);
}

/** The environment that points the handler's SDK clients at the local endpoint. */
export function localAwsEnvironment(aws: LocalAws): Record<string, string> {
  return { AWS_ENDPOINT_URL_AUTO_SCALING: aws.endpointUrl, AWS_ENDPOINT_URL_EKS: aws.endpointUrl, AWS_ENDPOINT_URL_SNS: aws.endpointUrl, AWS_ENDPOINT_URL_EC2: aws.endpointUrl };
}
