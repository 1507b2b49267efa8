// The CDK app that cdk.json runs: one stack with the construct, configured from the context.
// Every option of the release template is a context key, its camelCase twin (options/):
//   npx cdk deploy -c clusterName=prod -c autoScalingGroupNames=nodes-a,nodes-b -c mode=observe
// docs/deploy.md lists them. A bad value or an unknown key fails the synth, named; so does a
// context without the cluster and its groups: nothing is deployed to an assumed cluster.
import { App, CfnOutput, Stack, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { GracefulNodeTermination } from './graceful-node-termination.js';
import { ContextError, optionProps, readOptions } from './options/context.js';

export function buildApp(app: App): Stack {
  const options = readOptions(app);
  const stack = new Stack(app, String(app.node.tryGetContext('stackName') ?? 'GracefulNodeTermination'));
  const props = optionProps(options, stack);
  stack.templateOptions.description =
    'Graceful termination for self-managed node groups of EKS cluster ' + String(props.clusterName);
  const construct = new GracefulNodeTermination(stack, 'GracefulNodeTermination', props);
  addOutputs(stack, construct);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return stack;
}

/** The stack's outputs, the same in the release template (infra/release.ts); docs/deploy.md lists them. */
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
  try {
    buildApp(app);
  } catch (error) {
    // Said plainly, without a stack trace: it is the deployer's context, not a bug.
    if (!(error instanceof ContextError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  app.synth();
}
