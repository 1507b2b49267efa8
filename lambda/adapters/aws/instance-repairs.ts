// Node auto repair's AWS calls: the served groups' members (DescribeAutoScalingGroups), the
// replacement (SetInstanceHealth Unhealthy, so the group terminates the instance through its
// lifecycle hooks and launches another) and EC2 RebootInstances (over EC2's Query protocol,
// as ec2-instances.ts, without the EC2 SDK).
// https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_SetInstanceHealth.html
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_RebootInstances.html
import {
  DescribeAutoScalingGroupsCommand,
  SetInstanceHealthCommand,
  type AutoScalingClient,
} from '@aws-sdk/client-auto-scaling';
import type { GroupMember, InstanceRepairs } from '../../shared/aws-ports.js';
import { chunks } from '../../shared/concurrency.js';
import { AwsQuery, type QueryOptions } from './aws-query.js';

const groupsPerCall = 100;

export function createInstanceRepairs(client: AutoScalingClient, ec2: QueryOptions): InstanceRepairs {
  const query = new AwsQuery({ service: 'ec2', version: '2016-11-15', label: 'ec2' }, ec2);
  return {
    async members(groups) {
      const members: GroupMember[] = [];
      for (const batch of chunks([...new Set(groups)], groupsPerCall)) {
        let token: string | undefined;
        do {
          const answer = await client.send(
            new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: batch, NextToken: token }),
          );
          for (const g of answer.AutoScalingGroups ?? [])
            for (const i of g.Instances ?? [])
              if (i.InstanceId)
                members.push({
                  instanceId: i.InstanceId,
                  group: g.AutoScalingGroupName ?? '',
                  lifecycleState: i.LifecycleState ?? '',
                  healthStatus: i.HealthStatus ?? 'Healthy',
                  suspendedProcesses: (g.SuspendedProcesses ?? []).flatMap((p) => p.ProcessName ?? []),
                });
          token = answer.NextToken;
        } while (token);
      }
      return members;
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
