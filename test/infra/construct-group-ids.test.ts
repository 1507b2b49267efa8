// The construct's hooks of a group added with an id (infra/): the logical IDs version 0.1 gave them, and the Spot
// request read granted only with Spot draining.
import { App, CfnResource, Fn, Stack } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { grantsOf, resourcesOf, stackWith } from './fixtures.js';

// From the second adversarial review (it held; was test/unit/review/attacks-2.test.ts).
describe('addAutoScalingGroupName with an id', () => {
  // It synthesizes a stack: the first synthesis in a worker bundles the Lambda (esbuild), slow beside the release suite on two cores.
  it(
    "addAutoScalingGroupName(name, { id: 'Group2' }) gives the hooks the logical IDs version 0.1 gave the second group",
    { timeout: 90_000 },
    () => {
      const { stack, construct } = stackWith({ autoScalingGroupNames: ['nodes-a'] });
      // A token-named group, the second group added (0.1 numbered it Group2).
      construct.addAutoScalingGroupName(Fn.importValue('shared-nodes'), { id: 'Group2' });
      const hooks = Object.entries(resourcesOf(stack))
        .filter(([, r]) => r.Type === 'AWS::AutoScaling::LifecycleHook')
        .map(([id]) => id);
      // What 2bfcf39 built: the hooks directly under the construct, in a scope named Group2.
      const old = new Stack(new App(), 'Test');
      const group = new Construct(new Construct(old, 'Gnt'), 'Group2');
      const expected = ['Launch', 'Terminate'].map((id) =>
        old.getLogicalId(new CfnResource(group, id, { type: 'AWS::AutoScaling::LifecycleHook' })),
      );
      expect(hooks).toEqual(expect.arrayContaining(expected));
      // And the Spot request read is granted only with Spot draining.
      expect(grantsOf(resourcesOf(stackWith({}).stack), 'ec2:DescribeSpotInstanceRequests')).toEqual([]);
      expect(
        grantsOf(resourcesOf(stackWith({ spotInterruptions: true }).stack), 'ec2:DescribeSpotInstanceRequests'),
      ).toHaveLength(1);
    },
  );
});
