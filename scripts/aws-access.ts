// The AWS side of the operator commands: region and credentials from the SDK's own provider
// chain, as the AWS CLI finds them (--region, AWS_REGION, AWS_DEFAULT_REGION, the `region` of
// the profile in ~/.aws/config; --profile, AWS_PROFILE, SSO, environment, instance roles),
// and never a region of our choosing: a command that touched a same-named group in another
// region would act on the wrong fleet.
import { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { createEc2Instances } from '../lambda/adapters/aws/ec2-instances.js';
import type { InstanceDirectory } from '../lambda/shared/aws-ports.js';
import { createImageCatalog, type ImageCatalog } from './aws-images.js';
import { UsageError } from './command-options.js';

export interface AwsAccess {
  readonly region: string;
  /** The profile asked for (--profile, AWS_PROFILE), for messages. */
  readonly profile: string | undefined;
  readonly autoScaling: AutoScalingClient;
  readonly instances: InstanceDirectory;
  /** EC2's launch templates and images, SSM's public parameters (`upgrade --release`). */
  readonly images: ImageCatalog;
}

export const noRegionMessage =
  'no AWS region: pass --region, set AWS_REGION, or set `region` in the profile of ~/.aws/config (aws configure set region <region>)';

/** An empty variable (AWS_REGION=) is no setting: the SDK would take it as the region "". */
function dropEmpty(env: NodeJS.ProcessEnv, names: readonly string[]): void {
  for (const name of names) if (env[name] === '') delete env[name];
}

/**
 * The clients of a command, in the region the SDK resolves. Throws a UsageError (exit 2) when
 * none resolves.
 */
export async function resolveAwsAccess(
  o: { region?: string | undefined; profile?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
): Promise<AwsAccess> {
  dropEmpty(env, ['AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_PROFILE']);
  const profile = o.profile ?? env['AWS_PROFILE'];
  const autoScaling = new AutoScalingClient({
    ...(o.region ? { region: o.region } : {}),
    ...(o.profile ? { profile: o.profile } : {}),
  });
  let region: string;
  try {
    region = await autoScaling.config.region();
  } catch (error) {
    throw new UsageError(noRegionMessage, { cause: error });
  }
  if (!region) throw new UsageError(noRegionMessage);
  const instances = createEc2Instances({
    region,
    credentials: autoScaling.config.credentials,
    endpoint: env['AWS_ENDPOINT_URL_EC2'] ?? env['AWS_ENDPOINT_URL'],
  });
  const images = createImageCatalog({
    region,
    credentials: autoScaling.config.credentials,
    endpoint: env['AWS_ENDPOINT_URL_EC2'] ?? env['AWS_ENDPOINT_URL'],
    ssmEndpoint: env['AWS_ENDPOINT_URL_SSM'] ?? env['AWS_ENDPOINT_URL'],
  });
  return { region, profile, autoScaling, instances, images };
}
