// The release template for CloudFormation users, generated from the construct itself so it
// cannot drift from the CDK path: the construct is synthesized with sentinel values (each
// variant through cdk-nag), the JSON is rewritten into parameters (release-rewrite.ts), and a
// second synthesis with other sentinels must give the identical result, so no value that
// depends on a parameter can hide in it. docs/cloudformation.md explains the result.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { App, DefaultStackSynthesizer, Duration, Stack, Validations, aws_sns as sns } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { renderRbacYaml } from '../lambda/installer/rbac.js';
import { addOutputs } from './app.js';
import { DeadlinePolicy, GracefulNodeTermination } from './graceful-node-termination.js';
import { conditionNames, parameterNames as p, releaseConditions, releaseParameters, releaseRules } from './release-parameters.js';
import {
  firstDifference,
  isObject,
  loopPerGroupResources,
  mapJson,
  mergeResources,
  mergeVariants,
  parameterise,
  rewriteGroupLists,
  type GroupLoop,
  type Json,
  type JsonObject,
} from './release-rewrite.js';

interface Sentinels {
  readonly clusterName: string;
  readonly deploymentName: string;
  readonly groups: readonly [string, string];
  readonly heartbeatTimeout: number;
  readonly drainTimeout: number;
  readonly loadBalancerDelay: number;
  readonly launchTimeout: number;
  readonly alarmTopicArn: string;
}

/** Two sets, each value found nowhere else in a template (a collision fails the comparison). */
const sentinelSets: readonly [Sentinels, Sentinels] = [
  {
    clusterName: 'gntclusteralpha',
    deploymentName: 'gntdeployalpha',
    groups: ['gntgroupalpha', 'gntgroupbravo'],
    heartbeatTimeout: 3517,
    drainTimeout: 1213,
    loadBalancerDelay: 47,
    launchTimeout: 613,
    alarmTopicArn: 'arn:aws:sns:us-east-1:111111111111:gntalarmsalpha',
  },
  {
    clusterName: 'gntclustercharlie',
    deploymentName: 'gntdeploycharlie',
    groups: ['gntgroupcharlie', 'gntgroupdelta'],
    heartbeatTimeout: 3203,
    drainTimeout: 1109,
    loadBalancerDelay: 53,
    launchTimeout: 587,
    alarmTopicArn: 'arn:aws:sns:us-east-1:222222222222:gntalarmscharlie',
  },
];

interface Variant {
  readonly deadlinePolicy: DeadlinePolicy;
  readonly alarmTopic: boolean;
}

export interface Synthesized {
  readonly template: JsonObject;
  /** The staged Lambda asset: the directory the release zips. */
  readonly assetDirectory: string;
  /** Its hash (CDK's, of the bundled output). */
  readonly assetHash: string;
}

/** The construct in a stack of its own, as `cdk synth` makes it, through cdk-nag. */
function synthesize(s: Sentinels, v: Variant): Synthesized {
  const app = new App({ analyticsReporting: false, context: { 'aws:cdk:enable-path-metadata': false, 'aws:cdk:enable-asset-metadata': false } });
  const stack = new Stack(app, 'GracefulNodeTermination', { synthesizer: new DefaultStackSynthesizer({ generateBootstrapVersionRule: false }) });
  const construct = new GracefulNodeTermination(stack, 'GracefulNodeTermination', {
    clusterName: s.clusterName,
    autoScalingGroupNames: [...s.groups],
    deploymentName: s.deploymentName,
    heartbeatTimeout: Duration.seconds(s.heartbeatTimeout),
    drainTimeout: Duration.seconds(s.drainTimeout),
    loadBalancerDelay: Duration.seconds(s.loadBalancerDelay),
    launchTimeout: Duration.seconds(s.launchTimeout),
    deadlinePolicy: v.deadlinePolicy,
    // The template's users set the groups' instance lifecycle policy themselves (docs/cloudformation.md).
    retentionSetOutside: true,
    alarmTopic: v.alarmTopic ? sns.Topic.fromTopicArn(stack, 'AlarmTopic', s.alarmTopicArn) : undefined,
  });
  addOutputs(stack, construct);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  const assembly = app.synth();
  const template = assembly.getStackByName(stack.stackName).template as JsonObject;
  const key = JSON.stringify(template).match(/"S3Key":"([0-9a-f]{64})\.zip"/)?.[1];
  if (key === undefined) throw new Error('release: the synthesized template references no Lambda asset');
  return { template, assetDirectory: join(assembly.directory, `asset.${key}`), assetHash: key };
}

/** The asset's bootstrap bucket and hashed key become the code parameters. */
function replaceAssets(template: Json): Json {
  return mapJson(template, (n) => {
    if (!isObject(n) || n['S3Key'] === undefined || !JSON.stringify(n['S3Bucket'] ?? '').includes('-assets-')) return n;
    return { ...n, S3Bucket: { Ref: p.codeBucket }, S3Key: { Ref: p.codeKey } };
  });
}

/**
 * The RBAC custom resource re-applies when a property changes; its digest of the rendered RBAC
 * depends on the deployment name and the policy, which are parameters now: the release's own
 * digest (its rules for every policy) and the two parameters take its place.
 */
function rbacDigest(): Json {
  const rules = Object.values(DeadlinePolicy).map((policy) => renderRbacYaml('release', policy, 'release'));
  const digest = createHash('sha256').update(rules.join('\n---\n')).digest('hex').slice(0, 16);
  return { 'Fn::Sub': `${digest}-\${${p.deploymentName}}-\${${p.deadlinePolicy}}` };
}

/** One synthesized variant in parameterised form. */
function parameterised(s: Sentinels, v: Variant, template: JsonObject): JsonObject {
  const loop: GroupLoop = { groups: s.groups, parameter: p.groups, identifier: 'GroupName', loopName: 'LifecycleHooks' };
  const assetsReplaced = replaceAssets(template) as JsonObject;
  const looped = { ...assetsReplaced, Resources: loopPerGroupResources(assetsReplaced['Resources'] as JsonObject, loop) };
  const digested = mapJson(rewriteGroupLists(looped, loop), (n) => (isObject(n) && typeof n['RbacDigest'] === 'string' ? { ...n, RbacDigest: rbacDigest() } : n));
  const exact = new Map<string, string>([
    [String(s.heartbeatTimeout), p.heartbeatTimeout],
    [String(s.drainTimeout), p.drainTimeout],
    [String(s.loadBalancerDelay), p.loadBalancerDelay],
    [String(s.launchTimeout), p.launchTimeout],
    [v.deadlinePolicy, p.deadlinePolicy],
    [s.alarmTopicArn, p.alarmTopicArn],
  ]);
  const within = new Map([
    [s.clusterName, p.clusterName],
    [s.deploymentName, p.deploymentName],
  ]);
  return parameterise(digested, exact, within) as JsonObject;
}

/** A variant synthesized with both sentinel sets: the two must agree exactly once parameterised. */
function variantTemplate(v: Variant): Synthesized {
  const [first, second] = sentinelSets.map((s) => {
    const synthesized = synthesize(s, v);
    return { ...synthesized, template: parameterised(s, v, synthesized.template) };
  }) as [Synthesized, Synthesized];
  if (!isDeepStrictEqual(first.template, second.template)) {
    throw new Error(`release: a value derived from a parameter is left in the template (${JSON.stringify(v)}): ${firstDifference(first.template, second.template)}`);
  }
  const text = JSON.stringify(first.template);
  for (const s of sentinelSets)
    for (const value of [s.clusterName, s.deploymentName, ...s.groups]) if (text.includes(value)) throw new Error(`release: ${value} left in the template`);
  return first;
}

/** The deadline policies merged: leave must equal force; retain's differences go under RetainAtDeadline. */
function policiesMerged(alarmTopic: boolean): Synthesized {
  const [force, leave, retain] = [DeadlinePolicy.FORCE, DeadlinePolicy.LEAVE, DeadlinePolicy.RETAIN].map((deadlinePolicy) => variantTemplate({ deadlinePolicy, alarmTopic }));
  if (!isDeepStrictEqual(force!.template, leave!.template))
    throw new Error(`release: force and leave differ beyond the parameter: ${firstDifference(force!.template, leave!.template)}`);
  return { ...force!, template: mergeTemplates(retain!.template, force!.template, conditionNames.retain) };
}

function mergeTemplates(a: JsonObject, b: JsonObject, condition: string): JsonObject {
  const { Resources: resourcesA, ...restA } = a;
  const { Resources: resourcesB, ...restB } = b;
  const rest = mergeVariants(restA, restB, condition) as JsonObject;
  return { ...rest, Resources: mergeResources(resourcesA as JsonObject, resourcesB as JsonObject, condition) };
}

export interface Release {
  readonly template: JsonObject;
  readonly assetDirectory: string;
  /** The zip's file name: the code key's default, new with every change of the code. */
  readonly codeKey: string;
}

/** The release template and where its Lambda code is staged (scripts/release.ts zips it). */
export function generateRelease(version: string): Release {
  const withTopic = policiesMerged(true);
  const withoutTopic = policiesMerged(false);
  const { Resources, Outputs } = mergeTemplates(withTopic.template, withoutTopic.template, conditionNames.alarmTopic);
  const codeKey = `graceful-node-termination-${version}-lambda-${withTopic.assetHash.slice(0, 12)}.zip`;
  return {
    assetDirectory: withTopic.assetDirectory,
    codeKey,
    template: {
      AWSTemplateFormatVersion: '2010-09-09',
      Transform: 'AWS::LanguageExtensions',
      Description: `graceful-node-termination ${version}: graceful termination for self-managed EKS node groups (lifecycle hooks, an SNS topic, the drainer Lambda). docs/cloudformation.md`,
      Parameters: releaseParameters(codeKey),
      Rules: releaseRules(),
      Conditions: releaseConditions(),
      Resources: Resources!,
      Outputs: Outputs!,
    },
  };
}
