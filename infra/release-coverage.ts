// Every construct property, and the release template's parameter that stands for it or the
// reason none does. The type makes a new property without an entry a compile error;
// test/infra/release.test.ts checks the entries against props.ts and the template, and
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
  loadBalancerTags: { parameters: [p.loadBalancerTags] },
  waitForVolumeDetach: { parameters: [p.waitForVolumeDetach] },
  retentionSetOutside: { parameters: [p.retentionSetOutside] },
  deadlinePolicy: { parameters: [p.deadlinePolicy] },
  mode: { parameters: [p.mode] },
  outOfServiceAfterRelease: { parameters: [p.outOfServiceAfterRelease] },
  terminationPolicy: {
    parameters: [p.terminationDeferral, p.maintenanceWindows, p.maintenanceTimeZone, p.serviceLinkedRole],
  },
  repair: { parameters: [p.repair] },
  drainRules: { parameters: [p.drainRules] },
  evictDaemonSetPods: { parameters: [p.evictDaemonSetPods] },
  surgeBeforeEvict: {
    parameters: [p.surgeBeforeEvict, p.surgeNamespaces, p.surgePodSelector, p.surgeTimeout, p.surgeUntouchableManagers],
  },
  batchWait: { parameters: [p.batchWait] },
  minEvictionWindow: { parameters: [p.minEvictionWindow] },
  cordonDoomedSiblings: { parameters: [p.cordonDoomedSiblings] },
  markOutdatedOnRefresh: { parameters: [p.markOutdatedOnRefresh] },
  reconcileMarks: { parameters: [p.reconcileMarks] },
  reconcileInterval: { parameters: [p.reconcileInterval] },
  launchTimeout: { parameters: [p.launchTimeout] },
  reservedConcurrency: { parameters: [p.reservedConcurrency] },
  evictionConcurrency: { parameters: [p.evictionConcurrency] },
  memorySizeMiB: { parameters: [p.memorySize] },
  deploymentName: { parameters: [p.deploymentName] },
  kubernetesGroup: { parameters: [p.kubernetesGroup] },
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
  removalPolicy: { parameters: [p.removalPolicy] },
};
