// The stack the aspect's package test synthesizes: an eks.Cluster whose self-managed capacity
// comes from addAutoScalingGroupCapacity (on-demand and Spot) and connectAutoScalingGroupCapacity,
// and the aspect added to the app: no line per group. The repository's construct builds it in
// process (and test/infra/cluster-aspect.test.ts its variants); the fresh TypeScript app runs
// this very file, its import pointed at the installed package (apps.ts).
import {
  App,
  Aspects,
  Stack,
  aws_autoscaling as autoscaling,
  aws_ec2 as ec2,
  aws_eks as eks,
  aws_lambda as lambda,
} from 'aws-cdk-lib';
import { GracefulNodeTerminationAspect } from '../../infra/cluster-aspect.js';

/** The cluster, with groups OnDemand and Spot (addAutoScalingGroupCapacity) and Connected. */
export function clusterWithCapacity(stack: Stack, authenticationMode?: eks.AuthenticationMode) {
  const cluster = new eks.Cluster(stack, 'Cluster', {
    version: eks.KubernetesVersion.V1_34,
    // A real app passes @aws-cdk/lambda-layer-kubectl-v34's layer; synthesis only needs one.
    kubectlLayer: lambda.LayerVersion.fromLayerVersionArn(
      stack,
      'Kubectl',
      'arn:aws:lambda:eu-west-1:123456789012:layer:kubectl:1',
    ),
    defaultCapacity: 0,
    ...(authenticationMode !== undefined ? { authenticationMode } : {}),
  });
  // API mode has no aws-auth to map the nodes' roles in.
  const mapRole = authenticationMode !== eks.AuthenticationMode.API;
  const instanceType = new ec2.InstanceType('m5.large');
  cluster.addAutoScalingGroupCapacity('OnDemand', { instanceType, minCapacity: 1, mapRole });
  const spot = cluster.addAutoScalingGroupCapacity('Spot', { instanceType, spotPrice: '0.05', mapRole });
  const machineImage = new eks.EksOptimizedImage({ kubernetesVersion: '1.34' });
  const connected = new autoscaling.AutoScalingGroup(stack, 'Connected', {
    vpc: cluster.vpc,
    instanceType,
    machineImage,
  });
  cluster.connectAutoScalingGroupCapacity(connected, { mapRole });
  return { cluster, spot, connected, instanceType, machineImage };
}

export function clusterCapacityStack(app: App): Stack {
  const stack = new Stack(app, 'EksCapacity', { env: { account: '123456789012', region: 'eu-west-1' } });
  clusterWithCapacity(stack);
  Aspects.of(app).add(new GracefulNodeTerminationAspect({ alarmEmail: 'oncall@example.com' }));
  return stack;
}
