// The CDK app that cdk.json runs: one stack with the construct, configured from context.
//   npx cdk deploy -c clusterName=prod -c autoScalingGroupNames=nodes-a,nodes-b
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
  const autoScalingGroupNames = (get('autoScalingGroupNames') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (autoScalingGroupNames.length === 0) {
    throw new Error('context autoScalingGroupNames is required: cdk deploy -c autoScalingGroupNames=<group>,<group>');
  }
  const seconds = (key: string): number | undefined => {
    const raw = get(key);
    if (raw === undefined) return undefined;
    if (!/^\d+$/.test(raw)) throw new Error(`context ${key}=${raw} is invalid: expected a whole number of seconds`);
    return Number(raw);
  };
  const manage = get('manageKubernetesAccess') ?? 'true';
  if (manage !== 'true' && manage !== 'false') throw new Error(`context manageKubernetesAccess=${manage} is invalid: expected true or false`);
  const alarmEmail = get('alarmEmail');
  if (alarmEmail !== undefined && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(alarmEmail)) throw new Error(`context alarmEmail=${alarmEmail} is invalid: expected an email address`);
  const spot = get('spotInterruptions') ?? 'false';
  if (spot !== 'true' && spot !== 'false') throw new Error(`context spotInterruptions=${spot} is invalid: expected true or false`);
  return {
    clusterName,
    autoScalingGroupNames,
    alarmTopicArn: get('alarmTopicArn'),
    alarmEmail,
    spotInterruptions: spot === 'true',
    loadBalancerDelaySeconds: seconds('loadBalancerDelaySeconds'),
    drainTimeoutSeconds: seconds('drainTimeoutSeconds'),
    manageKubernetesAccess: manage === 'true',
  };
}

export function buildApp(app: App): Stack {
  const context = readContext(app);
  const stack = new Stack(app, String(app.node.tryGetContext('stackName') ?? 'GracefulNodeTermination'), {
    description: `Graceful termination for self-managed node groups of EKS cluster ${context.clusterName}`,
  });
  const construct = new GracefulNodeTermination(stack, 'GracefulNodeTermination', {
    clusterName: context.clusterName,
    autoScalingGroupNames: context.autoScalingGroupNames,
    alarmTopic: context.alarmTopicArn ? sns.Topic.fromTopicArn(stack, 'AlarmTopic', context.alarmTopicArn) : undefined,
    alarmEmail: context.alarmEmail,
    spotInterruptions: context.spotInterruptions,
    loadBalancerDelay: context.loadBalancerDelaySeconds !== undefined ? Duration.seconds(context.loadBalancerDelaySeconds) : undefined,
    drainTimeout: context.drainTimeoutSeconds !== undefined ? Duration.seconds(context.drainTimeoutSeconds) : undefined,
    manageKubernetesAccess: context.manageKubernetesAccess,
  });
  // What the README's "check it works" steps need.
  new CfnOutput(stack, 'FunctionName', { value: construct.function.functionName });
  // aws-auth clusters: map the role to this group and apply `npm run rbac:yaml -- --name <DeploymentName>`.
  new CfnOutput(stack, 'DeploymentName', { value: construct.deploymentName });
  new CfnOutput(stack, 'LogGroupName', { value: construct.function.logGroup.logGroupName });
  new CfnOutput(stack, 'FailedNotificationsQueueUrl', { value: construct.failedNotifications.queueUrl });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return stack;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const app = new App();
  buildApp(app);
  app.synth();
}
