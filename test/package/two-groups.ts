// The stack every install test synthesizes: two groups (one by name in the props, one as an
// IAutoScalingGroup), the cluster as an eks.ICluster, the deadline policy by enum, the dashboard on. The
// repository's construct builds it in process; the fresh TypeScript apps run this very file,
// its construct import pointed at the installed package (apps.ts).
import { App, Stack, aws_autoscaling as autoscaling, aws_eks as eks } from 'aws-cdk-lib';
import { DeadlinePolicy, GracefulNodeTermination } from '../../infra/graceful-node-termination.js';

export function twoGroupStack(app: App): Stack {
  const stack = new Stack(app, 'TwoGroups');
  const gnt = new GracefulNodeTermination(stack, 'GracefulNodeTermination', {
    cluster: eks.Cluster.fromClusterAttributes(stack, 'Cluster', { clusterName: 'prod' }),
    autoScalingGroupNames: ['nodes-a'],
    deadlinePolicy: DeadlinePolicy.LEAVE,
    alarmEmail: 'oncall@example.com',
    dashboard: true,
  });
  gnt.addAutoScalingGroup(autoscaling.AutoScalingGroup.fromAutoScalingGroupName(stack, 'NodesB', 'nodes-b'));
  return stack;
}
