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
import type { InstanceDirectory, InstanceRunState, Purchase } from '../../shared/aws-ports.js';
import { AwsQuery, listOf, parseAnswer, queryEndpoint, type QueryOptions, type Xml } from './aws-query.js';

export type Ec2Options = QueryOptions;

/** A filter takes at most 200 values. */
const idsPerCall = 200;

const ec2Api = { service: 'ec2', version: '2016-11-15', label: 'ec2' };

export function ec2Endpoint(region: string, override?: string): URL {
  return queryEndpoint(ec2Api.service, region, override);
}

/**
 * The query: an `instance-id` filter rather than InstanceId.N, because one unknown id (an
 * instance already gone) fails the whole InstanceId.N call with InvalidInstanceID.NotFound,
 * while a filter simply leaves it out.
 */
export function describeInstancesQuery(instanceIds: readonly string[], nextToken?: string): Record<string, string> {
  const query: Record<string, string> = { 'Filter.1.Name': 'instance-id' };
  instanceIds.forEach((id, i) => (query[`Filter.1.Value.${i + 1}`] = id));
  if (nextToken) query['NextToken'] = nextToken;
  return query;
}

const items = (v: unknown): Xml[] => listOf(v, 'item');

/**
 * From a DescribeInstancesResponse: instance id -> privateDnsName (empty names skipped), and
 * instance id -> instanceLifecycle (`spot`, `capacity-block`, ...; EC2 leaves the field out
 * for On-Demand, which is written here as `on-demand`).
 */
export function parseDescribeInstances(xml: string): {
  names: Map<string, string>;
  lifecycles: Map<string, string>;
  spotRequests: Map<string, string>;
  states: Map<string, InstanceRunState>;
  nextToken: string | undefined;
} {
  const root = parseAnswer(xml)['DescribeInstancesResponse'] as Xml | undefined;
  if (root === undefined) throw new Error('EC2 DescribeInstances: the answer has no DescribeInstancesResponse');
  const names = new Map<string, string>();
  const lifecycles = new Map<string, string>();
  const spotRequests = new Map<string, string>();
  const states = new Map<string, InstanceRunState>();
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
      states.set(id, runState(instance));
    }
  }
  const next = root['nextToken'];
  return {
    names,
    lifecycles,
    spotRequests,
    states,
    nextToken: typeof next === 'string' && next !== '' ? next : undefined,
  };
}

/** instanceState.name, and the group Auto Scaling tagged it with (it keeps the tag after termination). */
function runState(instance: Xml): InstanceRunState {
  const state = (instance['instanceState'] as Xml | undefined)?.['name'];
  const tag = items(instance['tagSet']).find((t) => t['key'] === 'aws:autoscaling:groupName')?.['value'];
  return { state: typeof state === 'string' ? state : 'unknown', ...(typeof tag === 'string' ? { group: tag } : {}) };
}

/** Spot request id -> its status code, from a DescribeSpotInstanceRequestsResponse. */
export function parseSpotRequestStatuses(xml: string): Map<string, string> {
  const root = parseAnswer(xml)['DescribeSpotInstanceRequestsResponse'] as Xml | undefined;
  if (root === undefined)
    throw new Error('EC2 DescribeSpotInstanceRequests: the answer has no DescribeSpotInstanceRequestsResponse');
  const statuses = new Map<string, string>();
  for (const request of items(root['spotInstanceRequestSet'])) {
    const id = request['spotInstanceRequestId'];
    const code = (request['status'] as Xml | undefined)?.['code'];
    if (typeof id === 'string' && typeof code === 'string') statuses.set(id, code);
  }
  return statuses;
}

export function createEc2Instances(options: Ec2Options): InstanceDirectory {
  const ec2 = new Ec2Query(options);
  return {
    launchTemplateVersions: (template) => ec2.launchTemplateVersions(template),
    privateDnsNames: (ids) => ec2.privateDnsNames(ids),
    purchase: (id) => ec2.purchase(id),
    runStates: (ids) => ec2.runStates(ids),
    spotRequestStatus: (id) => ec2.spotRequestStatus(id),
  };
}

/** EC2's calls, over its Query protocol (aws-query.ts). */
class Ec2Query {
  private readonly query: AwsQuery;

  constructor(options: Ec2Options) {
    this.query = new AwsQuery(ec2Api, options);
  }

  async launchTemplateVersions(template: {
    readonly id?: string | undefined;
    readonly name?: string | undefined;
  }): Promise<{ latest: string; default: string } | undefined> {
    const query: Record<string, string> = {};
    if (template.id) query['LaunchTemplateId.1'] = template.id;
    else if (template.name) query['LaunchTemplateName.1'] = template.name;
    else return undefined;
    const xml = await this.call('DescribeLaunchTemplates', query);
    const root = parseAnswer(xml)['DescribeLaunchTemplatesResponse'] as Xml | undefined;
    const item = items(root?.['launchTemplates'])[0];
    if (item === undefined) return undefined;
    return { latest: String(item['latestVersionNumber']), default: String(item['defaultVersionNumber']) };
  }

  async privateDnsNames(instanceIds: readonly string[]): Promise<ReadonlyMap<string, string>> {
    return (await this.describe(instanceIds)).names;
  }

  async runStates(instanceIds: readonly string[]): Promise<ReadonlyMap<string, InstanceRunState>> {
    return (await this.describe(instanceIds)).states;
  }

  async purchase(instanceId: string): Promise<Purchase | undefined> {
    const { lifecycles, spotRequests } = await this.describe([instanceId]);
    const lifecycle = lifecycles.get(instanceId);
    return lifecycle === undefined ? undefined : { lifecycle, spotRequestId: spotRequests.get(instanceId) };
  }

  async spotRequestStatus(requestId: string): Promise<string | undefined> {
    // A filter, like DescribeInstances: a request EC2 already forgot is absent, not an error.
    const query = { 'Filter.1.Name': 'spot-instance-request-id', 'Filter.1.Value.1': requestId };
    return parseSpotRequestStatuses(await this.call('DescribeSpotInstanceRequests', query)).get(requestId);
  }

  private async describe(instanceIds: readonly string[]) {
    const names = new Map<string, string>();
    const lifecycles = new Map<string, string>();
    const spotRequests = new Map<string, string>();
    const states = new Map<string, InstanceRunState>();
    for (let i = 0; i < instanceIds.length; i += idsPerCall) {
      const chunk = instanceIds.slice(i, i + idsPerCall);
      let nextToken: string | undefined;
      do {
        const page = parseDescribeInstances(
          await this.call('DescribeInstances', describeInstancesQuery(chunk, nextToken)),
        );
        for (const [id, name] of page.names) names.set(id, name);
        for (const [id, lifecycle] of page.lifecycles) lifecycles.set(id, lifecycle);
        for (const [id, request] of page.spotRequests) spotRequests.set(id, request);
        for (const [id, state] of page.states) states.set(id, state);
        nextToken = page.nextToken;
      } while (nextToken);
    }
    return { names, lifecycles, spotRequests, states };
  }

  private call(action: string, query: Record<string, string>): Promise<string> {
    return this.query.call(action, query);
  }
}
