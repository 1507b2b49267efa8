// The CDK app that cdk.json runs: one stack with the construct, configured from context.
//   npx cdk deploy -c clusterName=prod -c autoScalingGroupNames=nodes-a,nodes-b
// Optional: -c reconcileMarks=false, -c reconcileIntervalMinutes=10, -c dashboard=true (docs/deploy.md lists the others).
import { App, CfnOutput, Duration, Stack, Validations, aws_sns as sns } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { GracefulNodeTermination } from './graceful-node-termination.js';

export interface AppContext {
  readonly clusterName: string;
  readonly autoScalingGroupNames: readonly string[];
  readonly alarmTopicArn?: string;
  readonly alarmEmail?: string;
  readonly spotInterruptions: boolean;
  readonly loadBalancerDelaySeconds?: number;
  readonly drainTimeoutSeconds?: number;
  readonly manageKubernetesAccess: boolean;
  readonly reconcileMarks?: boolean;
  readonly reconcileIntervalMinutes?: number;
  readonly dashboard: boolean;
}

/** Reads and checks the context values; names the missing or bad one and how to pass it. */
export function readContext(app: App): AppContext {
  const get = (key: string): string | undefined => {
    const value: unknown = app.node.tryGetContext(key);
    if (value === undefined || value === null || value === '') return undefined;
    return Array.isArray(value) ? value.join(',') : String(value);
  };
  const clusterName = get('clusterName');
  if (!clusterName) throw new Error('context clusterName is required: cdk deploy -c clusterName=<your EKS cluster>');
  const autoScalingGroupNames = (get('autoScalingGroupNames') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (autoScalingGroupNames.length === 0) {
    throw new Error('context autoScalingGroupNames is required: cdk deploy -c autoScalingGroupNames=<group>,<group>');
  }
  const wholeNumber = (key: string, unit: string, min = 0, max = Number.MAX_SAFE_INTEGER): number | undefined => {
    const raw = get(key);
    if (raw === undefined) return undefined;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      throw new Error(
        `context ${key}=${raw} is invalid: expected a whole number of ${unit}${max < Number.MAX_SAFE_INTEGER ? ` from ${min} to ${max}` : ''}`,
      );
    }
    return Number(raw);
  };
  const flag = (key: string): boolean | undefined => {
    const raw = get(key);
    if (raw === undefined) return undefined;
    if (raw !== 'true' && raw !== 'false') throw new Error(`context ${key}=${raw} is invalid: expected true or false`);
    return raw === 'true';
  };
  const alarmEmail = get('alarmEmail');
  if (alarmEmail !== undefined && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(alarmEmail))
    throw new Error(`context alarmEmail=${alarmEmail} is invalid: expected an email address`);
  return {
    clusterName,
    autoScalingGroupNames,
    alarmTopicArn: get('alarmTopicArn'),
    alarmEmail,
    spotInterruptions: flag('spotInterruptions') ?? false,
    loadBalancerDelaySeconds: wholeNumber('loadBalancerDelaySeconds', 'seconds'),
    drainTimeoutSeconds: wholeNumber('drainTimeoutSeconds', 'seconds'),
    manageKubernetesAccess: flag('manageKubernetesAccess') ?? true,
    reconcileMarks: flag('reconcileMarks'),
    // The construct's own format (one minute to one day); it then checks the value against the heartbeat timeout.
    reconcileIntervalMinutes: wholeNumber('reconcileIntervalMinutes', 'minutes', 1, 1440),
    dashboard: flag('dashboard') ?? false,
  };
}

export function buildApp(app: App): Stack {
  const context = readContext(app);
  const stack = new Stack(app, String(app.node.tryGetContext('stackName') ?? 'GracefulNodeTermination'), {
    description: `Graceful termination for self-managed node groups of EKS cluster ${context.clusterName}`,
  });
  const construct = new GracefulNodeTermination(stack, 'GracefulNodeTermination', {
    clusterName: context.clusterName,
    autoScalingGroupNames: [...context.autoScalingGroupNames],
    alarmTopic: context.alarmTopicArn ? sns.Topic.fromTopicArn(stack, 'AlarmTopic', context.alarmTopicArn) : undefined,
    alarmEmail: context.alarmEmail,
    spotInterruptions: context.spotInterruptions,
    loadBalancerDelay:
      context.loadBalancerDelaySeconds !== undefined ? Duration.seconds(context.loadBalancerDelaySeconds) : undefined,
    drainTimeout: context.drainTimeoutSeconds !== undefined ? Duration.seconds(context.drainTimeoutSeconds) : undefined,
    manageKubernetesAccess: context.manageKubernetesAccess,
    reconcileMarks: context.reconcileMarks,
    reconcileInterval:
      context.reconcileIntervalMinutes !== undefined ? Duration.minutes(context.reconcileIntervalMinutes) : undefined,
    dashboard: context.dashboard,
  });
  addOutputs(stack, construct);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return stack;
}

/** The stack's outputs, the same in the release template (infra/release.ts). */
export function addOutputs(stack: Stack, construct: GracefulNodeTermination): void {
  // What docs/deploy.md's "check it works" steps need.
  new CfnOutput(stack, 'FunctionName', { value: construct.function.functionName });
  // A group's custom termination policy (`graceful-node-termination termination-policy enable`).
  new CfnOutput(stack, 'TerminationPolicyFunctionArn', { value: construct.function.functionArn });
  // aws-auth clusters: map the role to this group and apply `npm run rbac:yaml -- --name <DeploymentName>`.
  new CfnOutput(stack, 'DeploymentName', { value: construct.deploymentName });
  new CfnOutput(stack, 'LogGroupName', { value: construct.function.logGroup.logGroupName });
  new CfnOutput(stack, 'FailedNotificationsQueueUrl', { value: construct.failedNotifications.queueUrl });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const app = new App();
  buildApp(app);
  app.synth();
}
