// The names the release template's parts go by: its parameters (as the template and
// docs/cloudformation.md spell them), the conditions its variants merge under, and the
// reconciler's intervals it offers.
/**
 * Parameter names, as the template and docs/cloudformation.md spell them: the options'
 * (options/options.ts) and the code's (release.test.ts checks they are the same set).
 */
export const parameterNames = {
  clusterName: 'ClusterName',
  groups: 'AutoScalingGroupNames',
  deploymentName: 'DeploymentName',
  heartbeatTimeout: 'HeartbeatTimeoutSeconds',
  drainTimeout: 'DrainTimeoutSeconds',
  loadBalancerDelay: 'LoadBalancerDelaySeconds',
  launchTimeout: 'LaunchTimeoutSeconds',
  batchWait: 'BatchWaitSeconds',
  deadlinePolicy: 'DeadlinePolicy',
  mode: 'Mode',
  terminationDeferral: 'TerminationDeferralMaxSeconds',
  maintenanceWindows: 'MaintenanceWindows',
  maintenanceTimeZone: 'MaintenanceTimeZone',
  drainRules: 'DrainRules',
  waitForTargets: 'WaitForTargets',
  loadBalancerMinWait: 'LoadBalancerMinWaitSeconds',
  loadBalancerMaxWait: 'LoadBalancerMaxWaitSeconds',
  waitForVolumeDetach: 'WaitForVolumeDetach',
  spotInterruptions: 'SpotInterruptions',
  reconcileMarks: 'ReconcileMarks',
  reconcileInterval: 'ReconcileIntervalMinutes',
  repair: 'Repair',
  manageKubernetesAccess: 'ManageKubernetesAccess',
  subnetIds: 'SubnetIds',
  securityGroupIds: 'SecurityGroupIds',
  memorySize: 'MemorySizeMiB',
  logRetention: 'LogRetentionDays',
  permissionsBoundary: 'PermissionsBoundaryArn',
  rolePath: 'RolePath',
  alarmTopicArn: 'AlarmTopicArn',
  alarmEmail: 'AlarmEmail',
  runbookUrl: 'RunbookUrl',
  dashboard: 'Dashboard',
  kubernetesGroup: 'KubernetesGroup',
  retentionSetOutside: 'RetentionSetOutside',
  minEvictionWindow: 'MinEvictionWindowSeconds',
  evictDaemonSetPods: 'EvictDaemonSetPods',
  cordonDoomedSiblings: 'CordonDoomedSiblings',
  evictionConcurrency: 'EvictionConcurrency',
  loadBalancerTags: 'LoadBalancerTags',
  outOfServiceAfterRelease: 'OutOfServiceAfterRelease',
  surgeBeforeEvict: 'SurgeBeforeEvict',
  surgeNamespaces: 'SurgeNamespaces',
  surgePodSelector: 'SurgePodSelector',
  surgeTimeout: 'SurgeTimeoutSeconds',
  surgeUntouchableManagers: 'SurgeUntouchableManagers',
  markOutdatedOnRefresh: 'MarkOutdatedOnRefresh',
  serviceLinkedRole: 'TerminationPolicyServiceLinkedRoleArn',
  reservedConcurrency: 'ReservedConcurrency',
  removalPolicy: 'RemovalPolicy',
  codeBucket: 'LambdaCodeS3Bucket',
  codeKey: 'LambdaCodeS3Key',
} as const;

export type ParameterName = (typeof parameterNames)[keyof typeof parameterNames];

/**
 * The conditions the variants merge under (release.ts): each holds where its variant applies; `inverse` where it does
 * not.
 */
export const conditionNames = {
  retain: 'RetainAtDeadline',
  releases: 'ReleasesAtDeadline',
  alarmTopic: 'HasAlarmTopic',
  alarmEmail: 'HasAlarmEmail',
  inVpc: 'InVpc',
  withoutAccess: 'WithoutKubernetesAccess',
  managesAccess: 'ManagesKubernetesAccess',
  spot: 'DrainsSpotInterruptions',
  withoutReconciler: 'WithoutReconciler',
  reconciles: 'Reconciles',
  repairs: 'Repairs',
  withoutRepair: 'NoRepair',
  withoutTargetWait: 'WithoutTargetWait',
  withoutVolumeWait: 'WithoutVolumeDetachWait',
  boundary: 'HasPermissionsBoundary',
  dashboard: 'HasDashboard',
  kubernetesGroup: 'HasKubernetesGroup',
  evictsDaemonSetPods: 'EvictsDaemonSetPods',
  withoutSiblingCordon: 'WithoutSiblingCordon',
  withoutOutOfService: 'WithoutOutOfService',
  outOfService: 'TaintsOutOfService',
  surges: 'SurgesBeforeEvict',
  withoutRefreshMarks: 'WithoutRefreshMarks',
  marksRefreshes: 'MarksOutdatedOnRefresh',
  reservedConcurrency: 'HasReservedConcurrency',
  retainsData: 'RetainsData',
  serviceLinkedRole: 'HasServiceLinkedRole',
  runbook: 'HasRunbookUrl',
} as const;

/** The reconciler's intervals the template offers: a rate and an event age need arithmetic CloudFormation has not. */
export const reconcileIntervalChoices = [1, 2, 5, 10, 15, 30, 60, 120, 360, 720, 1440] as const;
export const reconcileMapping = 'ReconcileIntervals';
