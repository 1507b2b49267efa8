// The release template's parameters, conditions and rules: what a CloudFormation user sets
// instead of the construct's props. Ranges come from the handler's own variable definitions.
import { configVariables, DeadlinePolicy } from '../lambda/shared/config.js';
import { deploymentNamePattern, rbacName } from '../lambda/installer/rbac.js';
import { defaultIntervalMinutes, shortestHeartbeatSeconds } from '../lambda/shared/resume-window.js';
import type { JsonObject } from './release-rewrite.js';

/** Parameter names, as the template and docs/cloudformation.md spell them. */
export const parameterNames = {
  clusterName: 'ClusterName',
  groups: 'AutoScalingGroupNames',
  deploymentName: 'DeploymentName',
  heartbeatTimeout: 'HeartbeatTimeoutSeconds',
  drainTimeout: 'DrainTimeoutSeconds',
  loadBalancerDelay: 'LoadBalancerDelaySeconds',
  launchTimeout: 'LaunchTimeoutSeconds',
  deadlinePolicy: 'DeadlinePolicy',
  alarmTopicArn: 'AlarmTopicArn',
  codeBucket: 'LambdaCodeS3Bucket',
  codeKey: 'LambdaCodeS3Key',
} as const;

/** The conditions the variants merge under (release.ts). */
export const conditionNames = { retain: 'RetainAtDeadline', alarmTopic: 'HasAlarmTopic' } as const;

/**
 * The template's reconciler runs every 5 minutes (a schedule cannot be computed from a
 * parameter): the shortest heartbeat timeout under which it resumes a lost hand-off in time.
 */
const minHeartbeatSeconds = shortestHeartbeatSeconds(defaultIntervalMinutes, configVariables.invocationMarginSeconds.default!)!;

/** The longest launch wait one 15-minute invocation allows (the construct's own limit). */
const maxLaunchTimeoutSeconds = 15 * 60 - configVariables.invocationMarginSeconds.default!;

const seconds = (description: string, variable: { readonly default?: unknown }, min: number, max: number): JsonObject => ({
  Type: 'Number',
  Description: description,
  Default: Number(variable.default),
  MinValue: min,
  MaxValue: max,
});

export function releaseParameters(defaultCodeKey: string): JsonObject {
  return { ...whereParameters(), ...settingParameters(), ...codeParameters(defaultCodeKey) };
}

/** The cluster, the groups and the deployment's name. */
function whereParameters(): JsonObject {
  const p = parameterNames;
  return {
    [p.clusterName]: {
      Type: 'String',
      Description: 'Name of the EKS cluster the node groups join (authentication mode API or API_AND_CONFIG_MAP, Kubernetes 1.29 or later).',
      AllowedPattern: '^[0-9A-Za-z][A-Za-z0-9\\-_]{0,99}$',
    },
    [p.groups]: {
      Type: 'CommaDelimitedList',
      Description: 'Names of the existing Auto Scaling groups to serve, comma-separated: each gets a launch and a terminate lifecycle hook.',
    },
    [p.deploymentName]: {
      Type: 'String',
      Description: 'Names the hooks, alarms, RBAC objects, Kubernetes group and metrics. Two deployments on one cluster need two names. A DNS label.',
      Default: rbacName,
      AllowedPattern: deploymentNamePattern.source,
    },
  };
}

/** The hook and drain settings, and where the alarms go. */
function settingParameters(): JsonObject {
  const p = parameterNames;
  return {
    [p.heartbeatTimeout]: seconds(
      `The hooks' HeartbeatTimeout: how long Auto Scaling waits for the drainer before applying the default result. At least ${minHeartbeatSeconds}, so the reconciler (every 5 minutes) resumes a lost hand-off in time.`,
      configVariables.heartbeatTimeoutSeconds,
      minHeartbeatSeconds,
      7200,
    ),
    [p.drainTimeout]: seconds(
      'Longest time spent evicting and waiting for pods. Drain plus load-balancer delay plus 20 s must fit in min(48 h, 100 x heartbeat).',
      configVariables.drainTimeoutSeconds,
      0,
      172_800,
    ),
    [p.loadBalancerDelay]: seconds(
      'Fixed wait after the drain, when the load balancers tagged for the cluster cannot be read (else the drainer waits until they let the instance go).',
      configVariables.loadBalancerDelaySeconds,
      0,
      3600,
    ),
    [p.launchTimeout]: seconds(
      'How long a new node has to join Ready before its launch is abandoned. At most the heartbeat timeout minus 20 s.',
      configVariables.launchTimeoutSeconds,
      30,
      maxLaunchTimeoutSeconds,
    ),
    [p.deadlinePolicy]: {
      Type: 'String',
      Description:
        "Pods still on the node at the drain deadline: force deletes them, leave lets them die with the instance, retain completes with ABANDON (the groups' instance lifecycle policy must retain on ABANDON).",
      Default: DeadlinePolicy.FORCE,
      AllowedValues: Object.values(DeadlinePolicy),
    },
    [p.alarmTopicArn]: {
      Type: 'String',
      Description: 'SNS topic the alarms notify (its policy must let cloudwatch.amazonaws.com publish). Empty: the alarms notify no one.',
      Default: '',
      AllowedPattern: '^$|^arn:[a-z-]+:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$',
    },
  };
}

/** Where the release's Lambda zip is. */
function codeParameters(defaultCodeKey: string): JsonObject {
  const p = parameterNames;
  return {
    [p.codeBucket]: {
      Type: 'String',
      Description: 'S3 bucket in this region holding the Lambda zip of this release.',
      AllowedPattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$',
    },
    [p.codeKey]: { Type: 'String', Description: "Key of the Lambda zip in that bucket (the release's file name).", Default: defaultCodeKey },
  };
}

export function releaseConditions(): JsonObject {
  const p = parameterNames;
  return {
    [conditionNames.retain]: { 'Fn::Equals': [{ Ref: p.deadlinePolicy }, DeadlinePolicy.RETAIN] },
    [conditionNames.alarmTopic]: { 'Fn::Not': [{ 'Fn::Equals': [{ Ref: p.alarmTopicArn }, ''] }] },
  };
}

/** What CloudFormation checks before it creates anything. */
export function releaseRules(): JsonObject {
  return {
    GroupNamesNotEmpty: {
      Assertions: [
        {
          Assert: { 'Fn::Not': [{ 'Fn::Contains': [{ Ref: parameterNames.groups }, ''] }] },
          AssertDescription: 'AutoScalingGroupNames must name at least one group, without empty entries',
        },
      ],
    },
  };
}
