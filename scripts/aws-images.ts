// The AWS calls of `upgrade --release`, made without @aws-sdk/client-ec2 and
// @aws-sdk/client-ssm, for the reason ec2-instances.ts gives with its numbers (client-ec2 alone
// is ~1.4 MB minified, against ~0.5 MB for all of Auto Scaling; the installed command is one
// bundled file): EC2's three launch-template and image calls over the Query protocol the
// handler already speaks (aws-query.ts), and SSM's GetParameter over its JSON protocol, both
// signed with the SDK's SigV4 signer. Each honours AWS_ENDPOINT_URL_EC2 / AWS_ENDPOINT_URL_SSM.
//   https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeLaunchTemplateVersions.html
//   https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeImages.html
//   https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateLaunchTemplateVersion.html
//   https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameter.html
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { createHash } from 'node:crypto';
import {
  AwsQuery,
  listOf,
  parseAnswer,
  queryEndpoint,
  signedPost,
  type QueryOptions,
  type Xml,
} from '../lambda/adapters/aws/aws-query.js';
import type { ImageFacts } from './ami-release.js';

export interface TemplateRef {
  readonly id?: string | undefined;
  readonly name?: string | undefined;
}

export interface TemplateVersion {
  readonly templateId: string;
  readonly version: string;
  readonly imageId: string | undefined;
}

/** What `upgrade --release` asks of EC2 and SSM. */
export interface ImageCatalog {
  /** One version of a launch template ($Latest, $Default or a number), with its image. */
  templateVersion(template: TemplateRef, version: string): Promise<TemplateVersion | undefined>;
  image(imageId: string): Promise<ImageFacts | undefined>;
  /** A new version from `source` with only the image changed; the number EC2 gave it. */
  createVersion(template: TemplateVersion, imageId: string, description: string): Promise<string>;
  /** An SSM parameter's value; undefined when there is no such parameter. */
  parameter(name: string): Promise<string | undefined>;
}

const ec2Api = { service: 'ec2', version: '2016-11-15', label: 'ec2' };

function templateQuery(template: TemplateRef): Record<string, string> {
  if (template.id) return { LaunchTemplateId: template.id };
  if (template.name) return { LaunchTemplateName: template.name };
  throw new Error('a launch template needs an id or a name');
}

/** The CreateLaunchTemplateVersion form: the source version and only the image. */
export function createVersionQuery(
  template: TemplateVersion,
  imageId: string,
  description: string,
): Record<string, string> {
  // The same request asked again (a retry, the command run twice) is the same version: EC2
  // answers a repeated ClientToken with the version it made the first time.
  const clientToken = createHash('sha256')
    .update(`${template.templateId}/${template.version}/${imageId}`)
    .digest('hex')
    .slice(0, 64);
  return {
    LaunchTemplateId: template.templateId,
    SourceVersion: template.version,
    'LaunchTemplateData.ImageId': imageId,
    VersionDescription: description.slice(0, 255),
    ClientToken: clientToken,
  };
}

/**
 * The DescribeImages form for one image. An ImageId.N the account cannot see fails the call
 * (InvalidAMIID.NotFound): a filter does not. But a filter does not name the image the way
 * "specify its ID" does, and EC2 leaves a deprecated AMI out of DescribeImages unless asked for
 * it; AWS deprecates its public AMIs two years after they are made, so exactly the oldest groups,
 * the ones to upgrade, run one. IncludeDeprecated keeps them found.
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ami-deprecate.html
 */
export function describeImageQuery(imageId: string): Record<string, string> {
  return { 'Filter.1.Name': 'image-id', 'Filter.1.Value.1': imageId, IncludeDeprecated: 'true' };
}

export function parseTemplateVersion(xml: string): TemplateVersion | undefined {
  const root = parseAnswer(xml)['DescribeLaunchTemplateVersionsResponse'] as Xml | undefined;
  const item = listOf(root?.['launchTemplateVersionSet'])[0];
  if (item === undefined) return undefined;
  const image = (item['launchTemplateData'] as Xml | undefined)?.['imageId'];
  return {
    templateId: String(item['launchTemplateId']),
    version: String(item['versionNumber']),
    imageId: typeof image === 'string' && image !== '' ? image : undefined,
  };
}

export function parseImage(xml: string): ImageFacts | undefined {
  const root = parseAnswer(xml)['DescribeImagesResponse'] as Xml | undefined;
  const item = listOf(root?.['imagesSet'])[0];
  if (item === undefined) return undefined;
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  return {
    imageId: String(item['imageId']),
    name: text(item['name']),
    description: text(item['description']),
    architecture: text(item['architecture']),
  };
}

export function parseCreatedVersion(xml: string): string {
  const root = parseAnswer(xml)['CreateLaunchTemplateVersionResponse'] as Xml | undefined;
  const number = (root?.['launchTemplateVersion'] as Xml | undefined)?.['versionNumber'];
  if (number === undefined) throw new Error('EC2 CreateLaunchTemplateVersion: the answer names no versionNumber');
  return String(number);
}

export function createImageCatalog(
  options: QueryOptions & { readonly ssmEndpoint?: string | undefined },
): ImageCatalog {
  const ec2 = new AwsQuery(ec2Api, options);
  const ssm = new SsmJson(options);
  return {
    async templateVersion(template, version) {
      const xml = await ec2.call('DescribeLaunchTemplateVersions', {
        ...templateQuery(template),
        'LaunchTemplateVersion.1': version,
      });
      return parseTemplateVersion(xml);
    },
    async image(imageId) {
      return parseImage(await ec2.call('DescribeImages', describeImageQuery(imageId)));
    },
    async createVersion(template, imageId, description) {
      return parseCreatedVersion(
        await ec2.call('CreateLaunchTemplateVersion', createVersionQuery(template, imageId, description)),
      );
    },
    parameter: (name) => ssm.getParameter(name),
  };
}

/** The GetParameter request body (awsJson1_1): only the name; the public parameters are plain strings. */
export function getParameterRequest(name: string): { readonly target: string; readonly body: string } {
  return { target: 'AmazonSSM.GetParameter', body: JSON.stringify({ Name: name }) };
}

/** SSM's JSON protocol: a SigV4-signed POST with X-Amz-Target, retried on throttling and 5xx. */
class SsmJson {
  private readonly endpoint: URL;
  private readonly signer: SignatureV4;

  constructor(private readonly options: QueryOptions & { readonly ssmEndpoint?: string | undefined }) {
    this.endpoint = queryEndpoint('ssm', options.region, options.ssmEndpoint);
    this.signer = new SignatureV4({
      credentials: options.credentials,
      region: options.region,
      service: 'ssm',
      sha256: Sha256,
    });
  }

  async getParameter(name: string): Promise<string | undefined> {
    const { target, body } = getParameterRequest(name);
    for (let attempt = 1; ; attempt++) {
      const answer = await this.post(target, body);
      const parsed = (answer.body ? JSON.parse(answer.body) : {}) as {
        Parameter?: { Value?: string };
        __type?: string;
        message?: string;
        Message?: string;
      };
      if (answer.status === 200) return parsed.Parameter?.Value;
      const code = (parsed.__type ?? 'Unknown').split('#').pop()!;
      if (code === 'ParameterNotFound') return undefined;
      const retryable = answer.status >= 500 || /Throttl|TooManyUpdates/.test(code);
      if (!retryable || attempt >= (this.options.maxAttempts ?? 4))
        throw new Error(
          `ssm:GetParameter ${name} failed: HTTP ${answer.status} ${code}: ${parsed.message ?? parsed.Message ?? ''}`,
        );
      await (this.options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms))))(
        Math.round(Math.random() * 200 * 2 ** attempt),
      );
    }
  }

  private async post(target: string, body: string): Promise<{ status: number; body: string }> {
    const e = this.endpoint;
    const signed = await signedPost(
      this.signer,
      e,
      { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': target },
      body,
    );
    const response = await fetch(e, {
      method: 'POST',
      headers: signed.headers,
      body,
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
    });
    return { status: response.status, body: await response.text() };
  }
}
