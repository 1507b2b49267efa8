// EC2 DescribeInstances, for two facts: each instance's private DNS name, which is the name
// the kubelet registers its Node under on EKS (both hostname types: ip-10-0-1-2.<region>
// .compute.internal and i-0123....<region>.compute.internal), so a node is one GET instead of
// a list of the whole cluster; and whether it runs as Spot, with its Spot request's status
// (DescribeSpotInstanceRequests): a Spot warning is believed only for a Spot instance EC2
// means to interrupt. And DescribeLaunchTemplates, to resolve $Latest and $Default when an
// instance refresh starts.
//
// Why not @aws-sdk/client-ec2: bundled for DescribeInstances alone it is 1,478,292 bytes
// minified (the EC2 schema is one module), against 486,389 for all of Auto Scaling; our whole
// asset is ~570 KiB. This is one Query call, signed with the SigV4 signer the EKS token
// already uses, and parsed with the SDK's own XML parser (already in the bundle for Auto
// Scaling's Query answers).
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html
import { Sha256 } from '@aws-crypto/sha256-js';
import { partition } from '@aws-sdk/core/client';
import { parseXML } from '@aws-sdk/xml-builder';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import * as http from 'node:http';
import * as https from 'node:https';
import { ServiceBusyError, TransientError } from '../../shared/errors.js';
import type { InstanceDirectory, Purchase } from '../../shared/aws-ports.js';

export interface Ec2Options {
  readonly region: string;
  readonly credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** AWS_ENDPOINT_URL_EC2, as the SDKs read it; otherwise the partition's regional endpoint. */
  readonly endpoint?: string | undefined;
  readonly timeoutMs?: number;
  readonly maxAttempts?: number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** A filter takes at most 200 values. */
const idsPerCall = 200;

export function ec2Endpoint(region: string, override?: string): URL {
  return new URL(override ?? `https://ec2.${region}.${partition(region).dnsSuffix}/`);
}

/**
 * The query: an `instance-id` filter rather than InstanceId.N, because one unknown id (an
 * instance already gone) fails the whole InstanceId.N call with InvalidInstanceID.NotFound,
 * while a filter simply leaves it out.
 */
export function describeInstancesQuery(instanceIds: readonly string[], nextToken?: string): Record<string, string> {
  const query: Record<string, string> = { Action: 'DescribeInstances', Version: '2016-11-15', 'Filter.1.Name': 'instance-id' };
  instanceIds.forEach((id, i) => (query[`Filter.1.Value.${i + 1}`] = id));
  if (nextToken) query['NextToken'] = nextToken;
  return query;
}

type Xml = Record<string, unknown>;
const items = (v: unknown): Xml[] => {
  const item = (v as Xml | undefined)?.['item'];
  return item === undefined ? [] : ((Array.isArray(item) ? item : [item]) as Xml[]);
};

/**
 * From a DescribeInstancesResponse: instance id -> privateDnsName (empty names skipped), and
 * instance id -> instanceLifecycle (`spot`, `capacity-block`, ...; EC2 leaves the field out
 * for On-Demand, which is written here as `on-demand`).
 */
export function parseDescribeInstances(xml: string): {
  names: Map<string, string>;
  lifecycles: Map<string, string>;
  spotRequests: Map<string, string>;
  nextToken: string | undefined;
} {
  const root = (parseXML(xml) as Xml)['DescribeInstancesResponse'] as Xml | undefined;
  if (root === undefined) throw new Error('EC2 DescribeInstances: the answer has no DescribeInstancesResponse');
  const names = new Map<string, string>();
  const lifecycles = new Map<string, string>();
  const spotRequests = new Map<string, string>();
  for (const reservation of items(root['reservationSet'])) {
    for (const instance of items(reservation['instancesSet'])) {
      const id = instance['instanceId'];
      if (typeof id !== 'string') continue;
      const name = instance['privateDnsName'];
      if (typeof name === 'string' && name !== '') names.set(id, name);
      const lifecycle = instance['instanceLifecycle'];
      lifecycles.set(id, typeof lifecycle === 'string' && lifecycle !== '' ? lifecycle : 'on-demand');
      const request = instance['spotInstanceRequestId'];
      if (typeof request === 'string' && request !== '') spotRequests.set(id, request);
    }
  }
  const next = root['nextToken'];
  return { names, lifecycles, spotRequests, nextToken: typeof next === 'string' && next !== '' ? next : undefined };
}

/** Spot request id -> its status code, from a DescribeSpotInstanceRequestsResponse. */
export function parseSpotRequestStatuses(xml: string): Map<string, string> {
  const root = (parseXML(xml) as Xml)['DescribeSpotInstanceRequestsResponse'] as Xml | undefined;
  if (root === undefined) throw new Error('EC2 DescribeSpotInstanceRequests: the answer has no DescribeSpotInstanceRequestsResponse');
  const statuses = new Map<string, string>();
  for (const request of items(root['spotInstanceRequestSet'])) {
    const id = request['spotInstanceRequestId'];
    const code = (request['status'] as Xml | undefined)?.['code'];
    if (typeof id === 'string' && typeof code === 'string') statuses.set(id, code);
  }
  return statuses;
}

/** EC2's Query errors: `<Response><Errors><Error><Code>..</Code><Message>..</Message>`. */
function errorOf(xml: string): { code: string; message: string } {
  try {
    const errors = ((parseXML(xml) as Xml)['Response'] as Xml | undefined)?.['Errors'] as Xml | undefined;
    const error = errors?.['Error'] as Xml | undefined;
    return { code: String(error?.['Code'] ?? 'Unknown'), message: String(error?.['Message'] ?? xml.slice(0, 200)) };
  } catch {
    return { code: 'Unknown', message: xml.slice(0, 200) };
  }
}

const retryableCodes = new Set(['RequestLimitExceeded', 'Throttling', 'ThrottlingException', 'InternalError', 'Unavailable', 'ServiceUnavailable']);

export function createEc2Instances(options: Ec2Options): InstanceDirectory {
  const ec2 = new Ec2Query(options);
  return {
    launchTemplateVersions: (template) => ec2.launchTemplateVersions(template),
    privateDnsNames: (ids) => ec2.privateDnsNames(ids),
    purchase: (id) => ec2.purchase(id),
    spotRequestStatus: (id) => ec2.spotRequestStatus(id),
  };
}

/** EC2's Query protocol: a signed form POST, an XML answer. */
class Ec2Query {
  private readonly endpoint: URL;
  private readonly signer: SignatureV4;
  private readonly secure: boolean;
  private readonly agent: http.Agent;
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(options: Ec2Options) {
    this.endpoint = ec2Endpoint(options.region, options.endpoint);
    this.signer = new SignatureV4({ credentials: options.credentials, region: options.region, service: 'ec2', sha256: Sha256 });
    this.secure = this.endpoint.protocol === 'https:';
    this.agent = this.secure ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxAttempts = options.maxAttempts ?? 4;
    this.sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  }

  async launchTemplateVersions(template: { readonly id?: string | undefined; readonly name?: string | undefined }): Promise<{ latest: string; default: string } | undefined> {
    const query: Record<string, string> = { Action: 'DescribeLaunchTemplates', Version: '2016-11-15' };
    if (template.id) query['LaunchTemplateId.1'] = template.id;
    else if (template.name) query['LaunchTemplateName.1'] = template.name;
    else return undefined;
    const xml = await this.call('DescribeLaunchTemplates', query);
    const root = (parseXML(xml) as Xml)['DescribeLaunchTemplatesResponse'] as Xml | undefined;
    const item = items(root?.['launchTemplates'])[0];
    if (item === undefined) return undefined;
    return { latest: String(item['latestVersionNumber']), default: String(item['defaultVersionNumber']) };
  }

  async privateDnsNames(instanceIds: readonly string[]): Promise<ReadonlyMap<string, string>> {
    return (await this.describe(instanceIds)).names;
  }

  async purchase(instanceId: string): Promise<Purchase | undefined> {
    const { lifecycles, spotRequests } = await this.describe([instanceId]);
    const lifecycle = lifecycles.get(instanceId);
    return lifecycle === undefined ? undefined : { lifecycle, spotRequestId: spotRequests.get(instanceId) };
  }

  async spotRequestStatus(requestId: string): Promise<string | undefined> {
    // A filter, like DescribeInstances: a request EC2 already forgot is absent, not an error.
    const query = { Action: 'DescribeSpotInstanceRequests', Version: '2016-11-15', 'Filter.1.Name': 'spot-instance-request-id', 'Filter.1.Value.1': requestId };
    return parseSpotRequestStatuses(await this.call('DescribeSpotInstanceRequests', query)).get(requestId);
  }

  private async describe(instanceIds: readonly string[]): Promise<{ names: Map<string, string>; lifecycles: Map<string, string>; spotRequests: Map<string, string> }> {
    const names = new Map<string, string>();
    const lifecycles = new Map<string, string>();
    const spotRequests = new Map<string, string>();
    for (let i = 0; i < instanceIds.length; i += idsPerCall) {
      const chunk = instanceIds.slice(i, i + idsPerCall);
      let nextToken: string | undefined;
      do {
        const page = parseDescribeInstances(await this.call('DescribeInstances', describeInstancesQuery(chunk, nextToken)));
        for (const [id, name] of page.names) names.set(id, name);
        for (const [id, lifecycle] of page.lifecycles) lifecycles.set(id, lifecycle);
        for (const [id, request] of page.spotRequests) spotRequests.set(id, request);
        nextToken = page.nextToken;
      } while (nextToken);
    }
    return { names, lifecycles, spotRequests };
  }

  /** One call, retried with capped, jittered backoff on throttling, 5xx and network failures. */
  private async call(action: string, query: Record<string, string>): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      let failure: string;
      let answered = false;
      try {
        const answer = await this.post(query);
        if (answer.status === 200) return answer.body;
        const { code, message } = errorOf(answer.body);
        failure = `HTTP ${answer.status} ${code}: ${message}`;
        if (!(answer.status >= 500 || retryableCodes.has(code))) throw new TransientError(`ec2:${action} failed: ${failure}`);
        answered = true;
      } catch (error) {
        if (error instanceof TransientError) throw error;
        failure = (error as Error).message;
      }
      if (attempt >= this.maxAttempts) {
        const message = `ec2:${action} failed after ${attempt} attempts: ${failure}`;
        throw answered ? new ServiceBusyError(message) : new TransientError(message);
      }
      await this.sleep(Math.round(Math.random() * Math.min(4000, 200 * 2 ** attempt)));
    }
  }

  private async post(form: Record<string, string>): Promise<{ status: number; body: string }> {
    const body = new URLSearchParams(form).toString();
    const e = this.endpoint;
    const signed = await this.signer.sign(
      new HttpRequest({
        method: 'POST',
        protocol: e.protocol,
        hostname: e.hostname,
        port: e.port ? Number(e.port) : undefined,
        path: e.pathname,
        headers: { host: e.host, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) },
        body,
      }),
    );
    return new Promise((resolve, reject) => {
      const req = (this.secure ? https : http).request(e, { method: 'POST', headers: signed.headers, agent: this.agent, timeout: this.timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      });
      // Errors name the action of the call; the request names it in the form.
      req.on('timeout', () => req.destroy(new Error(`EC2 ${form['Action']}: no answer within ${this.timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }
}
