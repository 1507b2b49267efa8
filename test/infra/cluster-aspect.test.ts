// The aspect that serves an eks.Cluster's self-managed capacity without a line per group: it finds
// the groups from addAutoScalingGroupCapacity and connectAutoScalingGroupCapacity (and no
// other), leaves groups another construct serves, drains Spot warnings in place of aws-cdk-lib's
// aws-node-termination-handler (removed), and reaches the cluster through aws-auth or access
// entries as the cluster's authentication mode says. test/package/ proves the same in a fresh app.
import { App, Aspects, Stack, aws_autoscaling as autoscaling, aws_eks as eks } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { GracefulNodeTerminationAspect } from '../../infra/cluster-aspect.js';
import { GracefulNodeTermination, type GracefulNodeTerminationProps } from '../../infra/graceful-node-termination.js';
import { clusterWithCapacity } from '../package/cluster-capacity.js';
import type { Resources } from './fixtures.js';

interface Options {
  readonly mode?: eks.AuthenticationMode;
  /** aws-cdk-lib's aspect invocation v2 (the @aws-cdk/core:aspectStabilization feature flag). */
  readonly stabilized?: boolean;
  readonly aspect?: GracefulNodeTerminationProps | false;
  /** The app's own construct for the Spot group, before the aspect runs. */
  readonly spotServedByApp?: boolean;
}

/** A cluster with two groups from addAutoScalingGroupCapacity (one Spot), one connected, and a group of no cluster. */
function clusterApp(o: Options = {}) {
  const app = new App({ context: o.stabilized ? { '@aws-cdk/core:aspectStabilization': true } : {} });
  const stack = new Stack(app, 'Eks', { env: { account: '123456789012', region: 'eu-west-1' } });
  const { cluster, spot, instanceType, machineImage } = clusterWithCapacity(stack, o.mode);
  new autoscaling.AutoScalingGroup(stack, 'Bastions', { vpc: cluster.vpc, instanceType, machineImage });
  if (o.spotServedByApp) {
    new GracefulNodeTermination(stack, 'SpotDrainer', { cluster, autoScalingGroups: [spot], spotInterruptions: true });
  }
  if (o.aspect !== false) Aspects.of(app).add(new GracefulNodeTerminationAspect(o.aspect ?? {}));
  const template = Template.fromStack(stack);
  return { app, stack, template, resources: template.toJSON()['Resources'] as Resources };
}

/** The groups the hooks are on, by the construct that made each (`ClusterSpotASG...` is `ClusterSpot`). */
const hookedGroups = (resources: Resources): string[] =>
  Object.values(resources)
    .filter((r) => r.Type === 'AWS::AutoScaling::LifecycleHook')
    .map((r) => String((r.Properties['AutoScalingGroupName'] as { Ref: string }).Ref).replace(/ASG[0-9A-F]*$/, ''))
    .sort();
const helmCharts = (resources: Resources): string[] =>
  Object.values(resources)
    .filter((r) => r.Type === 'Custom::AWSCDK-EKS-HelmChart')
    .map((r) => String(r.Properties['Chart']));
const drainerVariables = (resources: Resources): Record<string, unknown> =>
  (
    Object.values(resources).find((r) => r.Properties['Handler'] === 'index.handler')!.Properties['Environment'] as {
      Variables: Record<string, unknown>;
    }
  ).Variables;

describe('GracefulNodeTerminationAspect', { timeout: 120_000 }, () => {
  it('without it, aws-cdk-lib installs aws-node-termination-handler for the Spot group and no group has a hook', () => {
    const { resources } = clusterApp({ aspect: false });
    expect(helmCharts(resources)).toEqual(['aws-node-termination-handler']);
    expect(hookedGroups(resources)).toEqual([]);
  });

  it("hooks every group the cluster got, and no other, and drains Spot warnings in place of aws-cdk-lib's handler", () => {
    const { resources, stack } = clusterApp();
    const twice = (g: string) => [g, g];
    expect(hookedGroups(resources)).toEqual([
      ...twice('ClusterOnDemand'),
      ...twice('ClusterSpot'),
      ...twice('Connected'),
    ]);
    expect(helmCharts(resources)).toEqual([]);
    expect(drainerVariables(resources)['SPOT_INTERRUPTIONS']).toBe('true');
    expect(
      Annotations.fromStack(stack).findInfo('*', Match.stringLikeRegexp('aws-node-termination-handler')),
    ).toHaveLength(1);
  });

  it('on an aws-auth cluster (the default mode), maps the drainer in aws-auth and applies its RBAC with kubectl, before any hook', () => {
    const { resources } = clusterApp();
    expect(Object.values(resources).filter((r) => r.Type === 'AWS::EKS::AccessEntry')).toEqual([]);
    expect(Object.values(resources).filter((r) => r.Type === 'Custom::KubernetesRbac')).toEqual([]);
    const manifests = Object.entries(resources).filter(([, r]) => r.Type === 'Custom::AWSCDK-EKS-KubernetesResource');
    const text = (r: unknown) => JSON.stringify(r);
    const [awsAuthId] = manifests.find(([, r]) => text(r).includes('aws-auth'))!;
    const [rbacId, rbac] = manifests.find(([, r]) => text(r).includes('ClusterRoleBinding'))!;
    const name = String(drainerVariables(resources)['DEPLOYMENT_NAME']);
    expect(text(rbac)).toContain(name);
    expect(text(rbac)).toContain('FlowSchema');
    // The drainer's role, its user and its group (the deployment's name), in aws-auth's mapRoles.
    const mapping = new RegExp(
      `ClusterGracefulNodeTerminationRole[^{}]*\\}[^{}]*username[^a-z]*${name}[^a-z]*groups[^a-z]*${name}`,
    );
    expect(text(resources[awsAuthId])).toMatch(mapping);
    for (const hook of Object.values(resources).filter((r) => r.Type === 'AWS::AutoScaling::LifecycleHook'))
      expect(hook.DependsOn).toEqual(expect.arrayContaining([rbacId, awsAuthId]));
  });

  it('on an access-entry cluster, gives the drainer its access entry and RBAC installer as the construct does', () => {
    for (const mode of [eks.AuthenticationMode.API, eks.AuthenticationMode.API_AND_CONFIG_MAP]) {
      const { resources } = clusterApp({ mode });
      expect(Object.values(resources).filter((r) => r.Type === 'Custom::KubernetesRbac')).toHaveLength(1);
      const manifests = Object.values(resources).filter((r) => r.Type === 'Custom::AWSCDK-EKS-KubernetesResource');
      expect(JSON.stringify(manifests)).not.toContain('ClusterRoleBinding');
    }
  });

  it('leaves a group another construct serves to it, and keeps the Spot handler for it with a warning', () => {
    const { resources, stack } = clusterApp({ spotServedByApp: true });
    const hooks = Object.values(resources).filter((r) => r.Type === 'AWS::AutoScaling::LifecycleHook');
    expect(hooks).toHaveLength(6);
    const spotHooks = hooks.filter((h) => JSON.stringify(h.Properties['AutoScalingGroupName']).includes('ClusterSpot'));
    expect(spotHooks.map((h) => String(h.Properties['LifecycleHookName']))).toEqual([
      expect.stringMatching(/-launch$/),
      expect.stringMatching(/-terminate$/),
    ]);
    expect(
      new Set(spotHooks.map((h) => String(h.Properties['LifecycleHookName']).split('-').slice(0, -1).join('-'))).size,
    ).toBe(1);
    expect(helmCharts(resources)).toEqual(['aws-node-termination-handler']);
    expect(
      Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('aws-node-termination-handler stays')),
    ).toHaveLength(1);
  });

  it("gives the same stack under aws-cdk-lib's second aspect invocation (aspectStabilization)", () => {
    const strip = (r: Resources) => JSON.parse(JSON.stringify(r).replace(/[0-9a-f]{64}/g, '<hash>')) as unknown;
    expect(strip(clusterApp({ stabilized: true }).resources)).toEqual(strip(clusterApp().resources));
  });

  it('takes every setting but the cluster and the groups, which it finds', () => {
    const { resources } = clusterApp({
      aspect: { deploymentName: 'drainer', drainTimeout: undefined, mode: undefined },
    });
    expect(drainerVariables(resources)['DEPLOYMENT_NAME']).toBe('drainer');
    for (const props of [{ clusterName: 'prod' }, { autoScalingGroupNames: ['a'] }]) {
      expect(() => new GracefulNodeTerminationAspect(props)).toThrow(
        /finds the cluster and its groups itself: leave out/,
      );
    }
    expect(() => clusterApp({ aspect: { spotInterruptions: false } })).toThrow(/leave out spotInterruptions: false/);
    expect(() => clusterApp({ aspect: { rolePath: '/platform/' } })).toThrow(/cannot be mapped in aws-auth/);
  });
});
