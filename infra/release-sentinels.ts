// The sentinel values the release template is synthesized with: one for every parameter that is
// a value, in two sets, each value found nowhere else in a template (release.ts turns each into
// its parameter, and the two sets must then give the same template).
import { aws_logs as logs } from 'aws-cdk-lib';

export interface Sentinels {
  readonly clusterName: string;
  readonly deploymentName: string;
  readonly groups: readonly [string, string];
  readonly heartbeatTimeout: number;
  readonly drainTimeout: number;
  readonly loadBalancerDelay: number;
  readonly launchTimeout: number;
  readonly batchWait: number;
  readonly loadBalancerMinWait: number;
  readonly loadBalancerMaxWait: number;
  readonly reconcileIntervalMinutes: number;
  readonly memorySize: number;
  readonly logRetention: logs.RetentionDays;
  readonly subnets: readonly [string, string];
  readonly securityGroups: readonly [string, string];
  readonly permissionsBoundary: string;
  readonly rolePath: string;
  readonly alarmTopicArn: string;
  readonly alarmEmail: string;
  readonly runbookUrl: string;
  readonly terminationDeferral: number;
  readonly maintenanceWindow: string;
  readonly maintenanceTimeZone: string;
  readonly drainRule: string;
  readonly minEvictionWindow: number;
  readonly evictionConcurrency: number;
  readonly loadBalancerTag: readonly [string, string];
  readonly kubernetesGroup: string;
  readonly reservedConcurrency: number;
  readonly serviceLinkedRole: string;
  readonly surgeNamespace: string;
  readonly surgePodSelector: string;
  readonly surgeTimeout: number;
  readonly surgeManager: string;
}

export const sentinelSets: readonly [Sentinels, Sentinels] = [
  {
    clusterName: 'gntclusteralpha',
    deploymentName: 'gntdeployalpha',
    groups: ['gntgroupalpha', 'gntgroupbravo'],
    heartbeatTimeout: 3517,
    drainTimeout: 1213,
    loadBalancerDelay: 47,
    launchTimeout: 613,
    batchWait: 7211,
    loadBalancerMinWait: 23,
    loadBalancerMaxWait: 277,
    reconcileIntervalMinutes: 37,
    memorySize: 389,
    logRetention: logs.RetentionDays.EIGHTEEN_MONTHS,
    subnets: ['subnet-0a1a0000000000a01', 'subnet-0a1a0000000000a02'],
    securityGroups: ['sg-0a1a0000000000a01', 'sg-0a1a0000000000a02'],
    permissionsBoundary: 'arn:aws:iam::111111111111:policy/gntboundaryalpha',
    rolePath: '/gntpathalpha/',
    alarmTopicArn: 'arn:aws:sns:us-east-1:111111111111:gntalarmsalpha',
    alarmEmail: 'gntalpha@gntmail.invalid',
    runbookUrl: 'https://gntrunbookalpha.invalid/ops',
    terminationDeferral: 293,
    maintenanceWindow: '17 3 * * TUE for 97m',
    maintenanceTimeZone: 'Pacific/Chatham',
    drainRule: 'gntrulealpha',
    minEvictionWindow: 71,
    evictionConcurrency: 97,
    loadBalancerTag: ['gnttagalpha', 'gntvaluealpha'],
    kubernetesGroup: 'gntk8salpha',
    reservedConcurrency: 163,
    serviceLinkedRole: 'arn:aws:iam::111111111111:role/aws-service-role/autoscaling.amazonaws.com/gntlinkedalpha',
    surgeNamespace: 'gntnsalpha',
    surgePodSelector: 'gntselectoralpha',
    surgeTimeout: 179,
    surgeManager: 'gntmanageralpha',
  },
  {
    clusterName: 'gntclustercharlie',
    deploymentName: 'gntdeploycharlie',
    groups: ['gntgroupcharlie', 'gntgroupdelta'],
    // Long enough for a reconciler every 41 minutes (the cold start and the synth check the pair).
    heartbeatTimeout: 3601,
    drainTimeout: 1109,
    loadBalancerDelay: 53,
    launchTimeout: 587,
    batchWait: 7307,
    loadBalancerMinWait: 29,
    loadBalancerMaxWait: 281,
    reconcileIntervalMinutes: 41,
    memorySize: 421,
    logRetention: logs.RetentionDays.SEVEN_YEARS,
    subnets: ['subnet-0c4c0000000000c01', 'subnet-0c4c0000000000c02'],
    securityGroups: ['sg-0c4c0000000000c01', 'sg-0c4c0000000000c02'],
    permissionsBoundary: 'arn:aws:iam::222222222222:policy/gntboundarycharlie',
    rolePath: '/gntpathcharlie/',
    alarmTopicArn: 'arn:aws:sns:us-east-1:222222222222:gntalarmscharlie',
    alarmEmail: 'gntcharlie@gntmail.invalid',
    runbookUrl: 'https://gntrunbookcharlie.invalid/ops',
    terminationDeferral: 307,
    maintenanceWindow: '19 5 * * THU for 83m',
    maintenanceTimeZone: 'America/St_Johns',
    drainRule: 'gntrulecharlie',
    minEvictionWindow: 79,
    evictionConcurrency: 89,
    loadBalancerTag: ['gnttagcharlie', 'gntvaluecharlie'],
    kubernetesGroup: 'gntk8scharlie',
    reservedConcurrency: 167,
    serviceLinkedRole: 'arn:aws:iam::222222222222:role/aws-service-role/autoscaling.amazonaws.com/gntlinkedcharlie',
    surgeNamespace: 'gntnscharlie',
    surgePodSelector: 'gntselectorcharlie',
    surgeTimeout: 191,
    surgeManager: 'gntmanagercharlie',
  },
];
