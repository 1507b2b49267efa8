// Node auto repair's AWS calls: the served groups' members (DescribeAutoScalingGroups, lean), the
// replacement (SetInstanceHealth Unhealthy, so the group terminates the instance through its
// lifecycle hooks and launches another) and EC2 RebootInstances (over EC2's Query protocol,
// as ec2-instances.ts, without the EC2 SDK).
// https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_SetInstanceHealth.html
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_RebootInstances.html
import { SetInstanceHealthCommand, type AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import type { InstanceRepairs } from '../../shared/aws-ports.js';
import { AwsQuery, type QueryOptions } from './aws-query.js';
import { readGroups, type QueryCaller } from './group-reads.js';

/** `groups` reads DescribeAutoScalingGroups lean (group-reads.ts); the writes go through the SDK client. */
export function createInstanceRepairs(
  client: AutoScalingClient,
  groups: QueryCaller,
  ec2: QueryOptions,
): InstanceRepairs {
  const query = new AwsQuery({ service: 'ec2', version: '2016-11-15', label: 'ec2' }, ec2);
  return {
    async members(names) {
      return (await readGroups(groups, names, { instances: true })).flatMap((g) =>
        g.instances.flatMap((i) =>
          i.instanceId ? [{ ...i, group: g.name, suspendedProcesses: g.suspendedProcesses }] : [],
        ),
      );
    },
    async setUnhealthy(instanceId) {
      // Within the group's health check grace period Auto Scaling keeps the instance: a node
      // that just joined is not replaced for what its agent said while it started.
      await client.send(
        new SetInstanceHealthCommand({
          InstanceId: instanceId,
          HealthStatus: 'Unhealthy',
          ShouldRespectGracePeriod: true,
        }),
      );
    },
    async setHealthy(instanceId) {
      await client.send(new SetInstanceHealthCommand({ InstanceId: instanceId, HealthStatus: 'Healthy' }));
    },
    async reboot(instanceId) {
      await query.call('RebootInstances', { 'InstanceId.1': instanceId });
    },
  };
}
