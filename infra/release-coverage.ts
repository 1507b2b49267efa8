// Every construct property, and the release template's parameter that stands for it or the
// reason none does. The type makes a new property without an entry a compile error;
// test/infra/release-coverage.test.ts checks the entries against props.ts and the template, and
// docs/cloudformation.md's tables are generated from this list (npm run docs).
import type { GracefulNodeTerminationProps } from './props.js';
import { parameterNames as p, type ParameterName } from './release-names.js';

export type Coverage = { readonly parameters: readonly ParameterName[] } | { readonly reason: string };

export const propertyCoverage: { readonly [K in keyof Required<GracefulNodeTerminationProps>]: Coverage } = {
  clusterName: { parameters: [p.clusterName] },
  cluster: { reason: 'A CDK object; the template takes the cluster by name (ClusterName).' },
  autoScalingGroupNames: { parameters: [p.groups] },
  autoScalingGroups: { reason: 'CDK objects; the template takes the groups by name (AutoScalingGroupNames).' },
  heartbeatTimeout: { parameters: [p.heartbeatTimeout] },
  drainTimeout: { parameters: [p.drainTimeout] },
  loadBalancerDelay: { parameters: [p.loadBalancerDelay] },
  waitForTargets: { parameters: [p.waitForTargets] },
  loadBalancerMinWait: { parameters: [p.loadBalancerMinWait] },
  loadBalancerMaxWait: { parameters: [p.loadBalancerMaxWait] },
  loadBalancerTags: {
    reason:
      'A map of tags, which no CloudFormation parameter type holds; it turns on the account-wide tag scan for load balancers other tools made, while the cluster itself names those of both load-balancer controllers (TargetGroupBindings, in-tree Services).',
  },
  waitForVolumeDetach: { parameters: [p.waitForVolumeDetach] },
  retentionSetOutside: {
    reason:
      'Always true in the template: it cannot set the instance lifecycle policy of groups it does not define, so DeadlinePolicy=retain asks you to.',
  },
  deadlinePolicy: { parameters: [p.deadlinePolicy] },
  mode: { parameters: [p.mode] },
  outOfServiceAfterRelease: {
    reason:
      'A safety default (on): it acts only on nodes our drain released with pods still on them, after EC2 says the instance is terminated; the construct can turn it off.',
  },
  terminationPolicy: { parameters: [p.terminationDeferral, p.maintenanceWindows, p.maintenanceTimeZone] },
  repair: { parameters: [p.repair] },
  drainRules: { parameters: [p.drainRules] },
  evictDaemonSetPods: {
    reason:
      'Off, as `kubectl drain --ignore-daemonsets`; turning it on changes what every drain does to node agents, through the construct.',
  },
  surgeBeforeEvict: {
    reason:
      'Opt-in per workload or namespace, with patch on Deployments fenced by an admission policy; the construct (surgeBeforeEvict) turns it on.',
  },
  batchWait: { parameters: [p.batchWait] },
  minEvictionWindow: {
    reason: 'A fairness floor most deployments never change; the construct default (60 s) applies.',
  },
  cordonDoomedSiblings: { reason: 'A safety default (on) with no known reason to turn it off; the construct can.' },
  markOutdatedOnRefresh: { reason: 'A safety default (on) that `upgrade` relies on; the construct can turn it off.' },
  reconcileMarks: { parameters: [p.reconcileMarks] },
  reconcileInterval: { parameters: [p.reconcileInterval] },
  launchTimeout: { parameters: [p.launchTimeout] },
  reservedConcurrency: {
    reason: "Reserved concurrency takes from the account's pool; sized per account, it is left to the construct.",
  },
  evictionConcurrency: {
    reason:
      'A tuning knob (32 in flight per node) measured as enough for 110 pods (docs/benchmarks.md); the construct can change it.',
  },
  memorySizeMiB: { parameters: [p.memorySize] },
  deploymentName: { parameters: [p.deploymentName] },
  kubernetesGroup: {
    reason:
      'The deployment name is the group; a different group is for clusters whose RBAC someone else manages, through the construct.',
  },
  manageKubernetesAccess: { parameters: [p.manageKubernetesAccess] },
  alarmTopic: { parameters: [p.alarmTopicArn] },
  alarmEmail: { parameters: [p.alarmEmail] },
  dashboard: { parameters: [p.dashboard] },
  runbookUrl: { parameters: [p.runbookUrl] },
  spotInterruptions: { parameters: [p.spotInterruptions] },
  vpc: { parameters: [p.subnetIds] },
  vpcSubnets: { parameters: [p.subnetIds] },
  securityGroups: { parameters: [p.securityGroupIds] },
  logRetention: { parameters: [p.logRetention] },
  permissionsBoundary: { parameters: [p.permissionsBoundary] },
  rolePath: { parameters: [p.rolePath] },
  removalPolicy: {
    reason:
      'A stack-level choice CloudFormation users make with a stack policy or by retaining on delete; the template keeps the construct default (DESTROY).',
  },
};
