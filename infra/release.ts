// The release template for CloudFormation users, generated from the construct itself so it
// cannot drift from the CDK path: the construct is synthesized with sentinel values, as a base
// and once per dimension (release-variants.ts, each through cdk-nag), the JSON is rewritten
// into parameters (release-rewrite.ts), a second synthesis with other sentinels must give the
// identical result, so no value that depends on a parameter can hide in it, and the variants
// merge under conditions (release-merge.ts). docs/cloudformation.md explains the result.
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { DeadlinePolicy, defaultRepairSettings, formatRepairSettings, Mode } from '../lambda/shared/config.js';
import { renderRbacYaml, renderSurgeYaml } from '../lambda/installer/rbac-yaml.js';
import { mergeConditional } from './release-merge.js';
import { releaseConditions, releaseMappings, releaseRules } from './release-conditions.js';
import { conditionNames, parameterNames as p, reconcileMapping } from './release-names.js';
import { releaseInterface, releaseParameters } from './release-parameters.js';
import {
  firstDifference,
  isObject,
  loopPerGroupResources,
  mapJson,
  parameterise,
  rewriteGroupLists,
  type GroupLoop,
  type Json,
  type JsonObject,
} from './release-rewrite.js';
import { sentinelSets, type Sentinels } from './release-sentinels.js';
import { dimensions, exclusive, synthesize, type Synthesized } from './release-variants.js';
import type { GracefulNodeTerminationProps } from './props.js';
import type { Stack } from 'aws-cdk-lib';

/** The asset's bootstrap bucket and hashed key become the code parameters. */
function replaceAssets(template: Json): Json {
  return mapJson(template, (n) => {
    if (!isObject(n) || n['S3Key'] === undefined || !JSON.stringify(n['S3Bucket'] ?? '').includes('-assets-')) return n;
    return { ...n, S3Bucket: { Ref: p.codeBucket }, S3Key: { Ref: p.codeKey } };
  });
}

/**
 * The RBAC custom resource re-applies when a property changes; its digest of the rendered RBAC
 * depends on the deployment name, the policy and surge before evict, which are parameters now:
 * the release's own digest (its rules for every policy, and surge's) and the parameters take
 * its place. (The group is a property of its own.)
 */
function rbacDigest(): Json {
  const rules = Object.values(DeadlinePolicy).map((policy) => renderRbacYaml('release', policy, 'release'));
  const surge = renderSurgeYaml('release', 'release');
  const digest = createHash('sha256')
    .update([...rules, surge].join('\n---\n'))
    .digest('hex')
    .slice(0, 16);
  const sub = [p.deploymentName, p.deadlinePolicy, p.surgeBeforeEvict].map((name) => `\${${name}}`).join('-');
  return { 'Fn::Sub': `${digest}-${sub}` };
}

type Extra = (stack: Stack, s: Sentinels) => Partial<GracefulNodeTerminationProps>;

/**
 * Sentinels that stand for a parameter wherever they occur whole (numbers also as the strings of the handler's
 * environment).
 */
function exactSentinels(s: Sentinels): Map<string, Json> {
  const ref = (parameter: string): Json => ({ Ref: parameter });
  const joined = (parameter: string): Json => ({ 'Fn::Join': [',', ref(parameter)] });
  const reconcile = (column: string): Json => ({
    'Fn::FindInMap': [reconcileMapping, { Ref: p.reconcileInterval }, column],
  });
  const numbers: [number, Json][] = [
    [s.heartbeatTimeout, ref(p.heartbeatTimeout)],
    [s.drainTimeout, ref(p.drainTimeout)],
    [s.loadBalancerDelay, ref(p.loadBalancerDelay)],
    [s.launchTimeout, ref(p.launchTimeout)],
    [s.batchWait, ref(p.batchWait)],
    [s.loadBalancerMinWait, ref(p.loadBalancerMinWait)],
    [s.loadBalancerMaxWait, ref(p.loadBalancerMaxWait)],
    [s.memorySize, ref(p.memorySize)],
    [s.logRetention, ref(p.logRetention)],
    [s.terminationDeferral, ref(p.terminationDeferral)],
    [s.minEvictionWindow, ref(p.minEvictionWindow)],
    [s.evictionConcurrency, ref(p.evictionConcurrency)],
    [s.reservedConcurrency, ref(p.reservedConcurrency)],
    [s.surgeTimeout, ref(p.surgeTimeout)],
    [s.reconcileIntervalMinutes * 60, reconcile('MaxEventAge')],
  ];
  const values: [Json, Json][] = [
    ...numbers.flatMap(([n, to]): [Json, Json][] => [
      [n, to],
      [String(n), to],
    ]),
    [`rate(${s.reconcileIntervalMinutes} minutes)`, reconcile('Rate')],
    // RECONCILE_INTERVAL_MINUTES: the cold start checks it against the heartbeat timeout.
    [String(s.reconcileIntervalMinutes), ref(p.reconcileInterval)],
    [DeadlinePolicy.FORCE, ref(p.deadlinePolicy)],
    [DeadlinePolicy.RETAIN, ref(p.deadlinePolicy)],
    [DeadlinePolicy.LEAVE, ref(p.deadlinePolicy)],
    [Mode.ENFORCE, ref(p.mode)],
    [s.maintenanceWindow, ref(p.maintenanceWindows)],
    [s.maintenanceTimeZone, ref(p.maintenanceTimeZone)],
    [JSON.stringify([{ name: s.drainRule, behavior: 'Skip' }]), ref(p.drainRules)],
    // REPAIR as the construct writes its defaults: the parameter's value (off, on or JSON) instead.
    [formatRepairSettings(defaultRepairSettings), ref(p.repair)],
    [s.alarmTopicArn, ref(p.alarmTopicArn)],
    [s.alarmEmail, ref(p.alarmEmail)],
    [s.permissionsBoundary, ref(p.permissionsBoundary)],
    [s.rolePath, ref(p.rolePath)],
    [[...s.subnets], ref(p.subnetIds)],
    [[...s.securityGroups], ref(p.securityGroupIds)],
    [s.loadBalancerTag.join('='), ref(p.loadBalancerTags)],
    [s.kubernetesGroup, ref(p.kubernetesGroup)],
    [s.serviceLinkedRole, ref(p.serviceLinkedRole)],
    [s.surgePodSelector, ref(p.surgePodSelector)],
    // Lists the handler reads comma-separated.
    [s.surgeNamespace, joined(p.surgeNamespaces)],
    [s.surgeManager, joined(p.surgeUntouchableManagers)],
  ];
  return new Map(values.map(([from, to]) => [JSON.stringify(from), to]));
}

/** CDK names the e-mail subscription after the address: in the template it is `<topic>Email`. */
function withoutEmailInIds(template: JsonObject, email: string): JsonObject {
  const inId = email.replace(/[^A-Za-z0-9]/g, '');
  const resources = Object.entries(template['Resources'] as JsonObject).map(([id, r]) => [
    id.includes(inId) ? `${id.split(inId)[0]}Email` : id,
    r,
  ]);
  return { ...template, Resources: Object.fromEntries(resources) as JsonObject };
}

/** One synthesized variant in parameterised form. */
function parameterised(s: Sentinels, template: JsonObject): JsonObject {
  const loop: GroupLoop = {
    groups: s.groups,
    parameter: p.groups,
    identifier: 'GroupName',
    loopName: 'LifecycleHooks',
  };
  const assetsReplaced = replaceAssets(template) as JsonObject;
  const looped = {
    ...assetsReplaced,
    Resources: loopPerGroupResources(assetsReplaced['Resources'] as JsonObject, loop),
  };
  const digested = mapJson(rewriteGroupLists(withoutEmailInIds(looped, s.alarmEmail), loop), (n) =>
    isObject(n) && typeof n['RbacDigest'] === 'string' ? { ...n, RbacDigest: rbacDigest() } : n,
  );
  const within = new Map([
    [s.clusterName, p.clusterName],
    [s.deploymentName, p.deploymentName],
    [s.runbookUrl, p.runbookUrl],
  ]);
  return parameterise(digested, exactSentinels(s), within) as JsonObject;
}

/** A variant synthesized with both sentinel sets: the two must agree exactly once parameterised. */
function variantTemplate(extra: Extra): Synthesized {
  const [first, second] = sentinelSets.map((s) => {
    const synthesized = synthesize(s, (stack) => extra(stack, s));
    return { ...synthesized, template: parameterised(s, synthesized.template) };
  }) as [Synthesized, Synthesized];
  if (!isDeepStrictEqual(first.template, second.template)) {
    throw new Error(
      `release: a value derived from a parameter is left in the template: ` +
        `${firstDifference(first.template, second.template)}`,
    );
  }
  const text = JSON.stringify(first.template);
  for (const s of sentinelSets)
    for (const value of [
      s.clusterName,
      s.deploymentName,
      ...s.groups,
      ...s.subnets,
      ...s.securityGroups,
      s.rolePath,
      s.runbookUrl,
      ...s.loadBalancerTag,
      s.kubernetesGroup,
      s.serviceLinkedRole,
      s.surgeNamespace,
      s.surgePodSelector,
      s.surgeManager,
      'vpc-of-the-subnets',
    ]) {
      if (text.includes(value)) throw new Error(`release: ${value} left in the template`);
    }
  return first;
}

/**
 * The base (release-variants.ts), and each dimension's variant merged in under its condition.
 * The leave policy must give what force gives exactly (the parameter is their only difference).
 */
function mergedTemplate(): Synthesized {
  const base = variantTemplate(() => ({}));
  const variants = dimensions.map((d) => ({
    condition: d.condition,
    inverse: d.inverse,
    covers: d.covers,
    template: variantTemplate((stack, s) => d.props(stack, s)).template,
  }));
  const force = variants.find((v) => v.condition === conditionNames.releases)!.template;
  const leave = variantTemplate(() => ({ deadlinePolicy: DeadlinePolicy.LEAVE })).template;
  if (!isDeepStrictEqual(force, leave))
    throw new Error(`release: force and leave differ beyond the parameter: ${firstDifference(force, leave)}`);
  return { ...base, template: mergeConditional(base.template, variants, exclusive) };
}

/**
 * One combination of dimensions, parameterised but not merged: what the merged template must expand to
 * (release.test.ts).
 */
export function variantFor(extra: Extra): JsonObject {
  return variantTemplate(extra).template;
}

export interface Release {
  readonly template: JsonObject;
  readonly assetDirectory: string;
  /** The zip's file name: the code key's default, new with every change of the code. */
  readonly codeKey: string;
}

/** The release template and where its Lambda code is staged (scripts/release.ts zips it). */
export function generateRelease(version: string): Release {
  const merged = mergedTemplate();
  const { Resources, Outputs } = merged.template;
  const codeKey = `graceful-node-termination-${version}-lambda-${merged.assetHash.slice(0, 12)}.zip`;
  return {
    assetDirectory: merged.assetDirectory,
    codeKey,
    template: {
      AWSTemplateFormatVersion: '2010-09-09',
      Transform: 'AWS::LanguageExtensions',
      Description:
        `graceful-node-termination ${version}: graceful termination for self-managed EKS node groups ` +
        `(lifecycle hooks, an SNS topic, the drainer Lambda). docs/cloudformation.md`,
      Metadata: releaseInterface(),
      Parameters: releaseParameters(codeKey),
      Rules: releaseRules(),
      Mappings: releaseMappings(),
      Conditions: releaseConditions(),
      Resources: Resources!,
      Outputs: Outputs!,
    },
  };
}
