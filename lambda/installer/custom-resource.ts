// The CloudFormation custom resource protocol, as the installer needs it, and the checks made
// before it connects to anything: the request names our stack, and the answer goes to
// CloudFormation's response bucket of our own region and partition, nowhere else.
// https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-requests.html
import { createHash } from 'node:crypto';
import { request } from 'node:https';
import { partition } from '@aws-sdk/core/client';

/** The fields of a CloudFormation custom resource request that we use. */
export interface CustomResourceEvent {
  readonly RequestType: 'Create' | 'Update' | 'Delete';
  readonly ResponseURL: string;
  readonly StackId: string;
  readonly RequestId: string;
  readonly LogicalResourceId: string;
  readonly PhysicalResourceId?: string;
  /** Informational only (they trigger an Update when they change); the installer reads its own environment. */
  readonly ResourceProperties: Readonly<Record<string, unknown>>;
}

export interface CustomResourceResponse {
  readonly Status: 'SUCCESS' | 'FAILED';
  readonly Reason?: string;
  readonly PhysicalResourceId: string;
  readonly StackId: string;
  readonly RequestId: string;
  readonly LogicalResourceId: string;
  readonly Data?: Record<string, string>;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * CloudFormation's presigned response URLs live in its response bucket of the stack's region,
 * `cloudformation-custom-resource-response-<region without dashes>`, under the partition's own
 * DNS suffix (amazonaws.com, amazonaws.com.cn, c2s.ic.gov, sc2s.sgov.gov, amazonaws.eu, ...,
 * from the SDK's partition table). Anything else is refused: nothing is sent to it.
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html
 */
export function isCloudFormationResponseUrl(url: string, region: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  const bucket = `cloudformation-custom-resource-response-${region.replaceAll('-', '')}`;
  const suffix = escape(partition(region).dnsSuffix);
  const r = escape(region);
  const host = new RegExp(`^${escape(bucket)}\\.s3(?:[.-](?:${r}|external-1|dualstack\\.${r}))?\\.${suffix}$`);
  return u.protocol === 'https:' && u.port === '' && host.test(u.hostname);
}

/**
 * The physical id names the objects and the group they were bound to: a changed group is a
 * new id, so CloudFormation updates the access entry after the new binding exists and then
 * sends a Delete of the old id, which only drops the old group from the binding.
 */
export function physicalIdFor(name: string, group: string): string {
  return `${name}-rbac-${createHash('sha256').update(group).digest('hex').slice(0, 8)}`;
}

/** The name and group hash a physical id stands for (ids from before groups were named: no hash). */
export function parsePhysicalId(
  id: string,
): { readonly name: string; readonly groupHash: string | undefined } | undefined {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)-rbac(?:-([0-9a-f]{8}))?$/.exec(id);
  return m ? { name: m[1]!, groupHash: m[3] } : undefined;
}

/** PUTs the result to CloudFormation's presigned S3 URL (an empty Content-Type, as it requires). */
export function respondToCloudFormation(url: string, response: CustomResourceResponse): Promise<void> {
  const body = JSON.stringify(response);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'PUT', headers: { 'Content-Type': '', 'Content-Length': Buffer.byteLength(body) }, timeout: 10_000 },
      (res) => {
        res.resume();
        res.on('end', () =>
          (res.statusCode ?? 0) < 300
            ? resolve()
            : reject(new Error(`CloudFormation response: HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('CloudFormation response: timed out')));
    req.on('error', reject);
    req.end(body);
  });
}
