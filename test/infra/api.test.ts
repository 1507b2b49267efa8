// The construct's API as jsii shapes it for other languages (packages/construct): the cluster
// as a name or an eks.ICluster, groups by name or as IAutoScalingGroup through two methods.
import { Stack, aws_autoscaling as autoscaling, aws_eks as eks } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { resourcesOf, stackWith } from './fixtures.js';

// The first synthesis in a worker bundles the Lambda (esbuild).
describe('the construct API', { timeout: 120_000 }, () => {
  it('takes the cluster as an eks.ICluster and builds what its name builds', () => {
    const byName = resourcesOf(stackWith({ clusterName: 'prod' }).stack);
    const byCluster = resourcesOf(
      stackWith({
        clusterName: undefined,
        setup: (stack) => ({ cluster: eks.Cluster.fromClusterAttributes(stack, 'Cluster', { clusterName: 'prod' }) }),
      }).stack,
    );
    expect(byCluster).toEqual(byName);
  });

  it('refuses a construct without its cluster, or with a name and a cluster that disagree', () => {
    expect(() => stackWith({ clusterName: undefined })).toThrow(/needs its cluster: pass clusterName .* or cluster/);
    expect(() =>
      stackWith({
        clusterName: 'staging',
        setup: (stack) => ({ cluster: eks.Cluster.fromClusterAttributes(stack, 'Cluster', { clusterName: 'prod' }) }),
      }),
    ).toThrow(/clusterName "staging" is not the name of cluster "prod"/);
  });

  it('puts the same hooks on a group added by name and on the same group imported', () => {
    const hooksOf = (stack: Stack) =>
      Object.keys(resourcesOf(stack)).filter((id) => /^GntGroupnodesb(Launch|Terminate)/.test(id));
    const byName = stackWith({});
    byName.construct.addAutoScalingGroupName('nodes-b');
    const imported = stackWith({});
    imported.construct.addAutoScalingGroup(
      autoscaling.AutoScalingGroup.fromAutoScalingGroupName(imported.stack, 'NodesB', 'nodes-b'),
      {},
    );
    expect(hooksOf(imported.stack)).toHaveLength(2);
    expect(hooksOf(imported.stack)).toEqual(hooksOf(byName.stack));
  });
});
