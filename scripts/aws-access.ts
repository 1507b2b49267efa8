// The AWS side of the operator commands: region and credentials from the SDK's own provider
// chain, as the AWS CLI finds them (--region, AWS_REGION, AWS_DEFAULT_REGION, the `region` of
// the profile in ~/.aws/config; --profile, AWS_PROFILE, SSO, environment, instance roles),
// and never a region of our choosing: a command that touched a same-named group in another
// region would act on the wrong fleet.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
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

/** The shared config and credentials files, as the SDK finds them (AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE). */
function sharedFiles(env: NodeJS.ProcessEnv): { config: string; credentials: string; said: [string, string] } {
  const home = env['HOME'] || homedir();
  const config = env['AWS_CONFIG_FILE'] || join(home, '.aws', 'config');
  const credentials = env['AWS_SHARED_CREDENTIALS_FILE'] || join(home, '.aws', 'credentials');
  return {
    config,
    credentials,
    said: [env['AWS_CONFIG_FILE'] || '~/.aws/config', env['AWS_SHARED_CREDENTIALS_FILE'] || '~/.aws/credentials'],
  };
}

/** The section names of an ini file ([name]); none when the file cannot be read. */
function sections(file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return [...text.matchAll(/^\s*\[([^\]]+)\]/gm)].map((m) => m[1]!.trim().replace(/\s+/g, ' '));
}

/**
 * The profiles the SDK knows: `[default]` and `[profile <name>]` in the config file (its other
 * sections, sso-session and services, are no profiles), every section of the credentials file.
 * https://docs.aws.amazon.com/sdkref/latest/guide/file-format.html
 */
export function knownProfiles(env: NodeJS.ProcessEnv = process.env): string[] {
  const files = sharedFiles(env);
  const fromConfig = sections(files.config).flatMap((s) =>
    s === 'default' ? ['default'] : s.startsWith('profile ') ? [s.slice('profile '.length).trim()] : [],
  );
  return [...new Set([...fromConfig, ...sections(files.credentials)])];
}

/**
 * A named profile (--profile, AWS_PROFILE) that neither file has: the SDK would find no region
 * and no credentials for it, and say only "no region"; the AWS CLI says the profile is missing.
 */
function requireKnownProfile(profile: string | undefined, env: NodeJS.ProcessEnv): void {
  if (profile === undefined) return;
  const known = knownProfiles(env);
  if (known.includes(profile)) return;
  const [config, credentials] = sharedFiles(env).said;
  throw new UsageError(
    `the AWS profile ${profile} is in neither ${config} nor ${credentials} ` +
      `(profiles there: ${known.join(', ') || 'none'}); ` +
      `pass one of them with --profile, or set it up: aws configure --profile ${profile}`,
  );
}

/**
 * The clients of a command, in the region the SDK resolves. Throws a UsageError (exit 2) when
 * none resolves, or when the profile named is in neither shared file.
 */
export async function resolveAwsAccess(
  o: { region?: string | undefined; profile?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
): Promise<AwsAccess> {
  dropEmpty(env, ['AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_PROFILE']);
  const profile = o.profile ?? env['AWS_PROFILE'];
  requireKnownProfile(profile, env);
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
