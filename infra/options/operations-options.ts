// Where the alarms go, and where and how the functions run: the network, memory and
// concurrency, logs, what a deleted stack keeps, and the roles' boundary and path.
import { RemovalPolicy, aws_ec2 as ec2, aws_iam as iam, aws_logs as logs, aws_sns as sns } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { rolePathPattern } from '../prop-checks.js';
import { choice, flag, list, numberChoice, text, wholeNumber } from './kinds.js';
import { option, type OptionGroup } from './option.js';

export const alarmOptions: OptionGroup = {
  label: 'Alarms and dashboard',
  options: [
    option({
      name: 'AlarmTopicArn',
      label: 'Alarm topic ARN',
      description: 'SNS topic the alarms notify (cloudwatch.amazonaws.com may publish). Empty: AlarmEmail.',
      kind: text({
        accepts: 'an SNS topic ARN',
        default: '',
        pattern: /^arn:[a-z-]+:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$/,
      }),
      props: (arn, scope) => ({ alarmTopic: sns.Topic.fromTopicArn(scope, 'AlarmTopic', arn) }),
    }),
    option({
      name: 'AlarmEmail',
      label: 'Alarm e-mail',
      description:
        'Without AlarmTopicArn: an encrypted alarm topic with this e-mail subscription (confirm the e-mail AWS sends).',
      kind: text({ accepts: 'an e-mail address', default: '', pattern: /^[^\s@,]+@[^\s@,]+\.[^\s@,]+$/ }),
      props: (alarmEmail) => ({ alarmEmail }),
    }),
    option({
      name: 'RunbookUrl',
      label: 'Runbook URL',
      description:
        "Your runbook: each alarm's description, which carries its first steps, then links to " +
        '<RunbookUrl>#alarm-<name>. Empty: no link.',
      kind: text({ accepts: 'an http(s) URL', default: '', pattern: /^https?:\/\/\S+$/ }),
      props: (runbookUrl) => ({ runbookUrl }),
    }),
    option({
      name: 'Dashboard',
      label: 'Dashboard',
      description: 'A CloudWatch dashboard <DeploymentName>-<region>.',
      kind: flag(false),
      props: (dashboard) => ({ dashboard }),
    }),
  ],
};

/**
 * A VPC that is only its subnets. Lambda's VpcConfig takes subnet and security group ids, and
 * with the security groups given nothing else of the VPC is read: its id and zones below are
 * never written to a template (the release test checks).
 */
export function subnetsOnlyVpc(scope: Construct, subnetIds: readonly string[]): ec2.IVpc {
  return ec2.Vpc.fromVpcAttributes(scope, 'Vpc', {
    vpcId: 'vpc-of-the-subnets',
    availabilityZones: subnetIds.map((_, i) => `zone-of-subnet-${i}`),
    privateSubnetIds: [...subnetIds],
  });
}

/** The log retentions CloudWatch Logs accepts (never-expire left out: choose a number of days). */
const retentionChoices = Object.values(logs.RetentionDays).filter(
  (d): d is number => typeof d === 'number' && d !== logs.RetentionDays.INFINITE,
);

export const placementOptions: OptionGroup = {
  label: 'Functions, network and IAM',
  options: [
    option({
      name: 'SubnetIds',
      label: 'Subnets',
      description: 'Subnets for the functions (private cluster endpoints), comma-separated. Empty: not in a VPC.',
      kind: list({ accepts: 'subnet ids, comma-separated', item: /^subnet-[0-9a-f]+$/ }),
      needs: { option: 'SecurityGroupIds' },
      props: (ids, scope) => ({ vpc: subnetsOnlyVpc(scope, ids) }),
    }),
    option({
      name: 'SecurityGroupIds',
      label: 'Security groups',
      description:
        'Security groups for the functions, with SubnetIds (the cluster security group must admit them on 443).',
      kind: list({ accepts: 'security group ids, comma-separated', item: /^sg-[0-9a-f]+$/ }),
      needs: { option: 'SubnetIds' },
      props: (ids, scope) => ({
        securityGroups: ids.map((id, i) => ec2.SecurityGroup.fromSecurityGroupId(scope, `SecurityGroup${i}`, id)),
      }),
    }),
    option({
      name: 'MemorySizeMiB',
      label: 'Memory (MiB)',
      description: 'Memory of the drainer, MiB.',
      kind: wholeNumber({ min: 128, max: 10240, default: 256 }),
      props: (memorySizeMiB) => ({ memorySizeMiB }),
    }),
    option({
      name: 'ReservedConcurrency',
      label: 'Reserved concurrency',
      description:
        'Reserved concurrency for the drainer, sized for the most instances terminating at once. 0: unreserved ' +
        "(the account's shared pool).",
      kind: wholeNumber({ min: 0, default: 0 }),
      props: (n) => (n > 0 ? { reservedConcurrency: n } : {}),
    }),
    option({
      name: 'LogRetentionDays',
      label: 'Log retention (days)',
      description: "Days the functions' logs are kept.",
      kind: numberChoice(retentionChoices, logs.RetentionDays.ONE_MONTH, 'days'),
      props: (days) => ({ logRetention: days as logs.RetentionDays }),
    }),
    option({
      name: 'RemovalPolicy',
      label: 'When the stack is deleted',
      description:
        'What happens to the key, the log groups and the failed-notifications queue when they leave the stack: ' +
        'destroy, or retain (a deleted deployment stays readable).',
      kind: choice(['destroy', 'retain'], 'destroy'),
      props: (p) => ({ removalPolicy: p === 'retain' ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY }),
    }),
    option({
      name: 'PermissionsBoundaryArn',
      label: 'Permissions boundary',
      description: 'Permissions boundary for every role the stack creates. Empty: none.',
      kind: text({
        accepts: 'an IAM managed policy ARN',
        default: '',
        pattern: /^arn:aws[a-z-]*:iam::([0-9]{12}|aws):policy\/.+$/,
      }),
      props: (arn, scope) => ({
        permissionsBoundary: iam.ManagedPolicy.fromManagedPolicyArn(scope, 'PermissionsBoundary', arn),
      }),
    }),
    option({
      name: 'RolePath',
      label: 'Role path',
      description: 'IAM path of every role the stack creates.',
      kind: text({ accepts: 'an IAM path: "/" or "/a/b/"', default: '/', pattern: rolePathPattern, maxLength: 512 }),
      props: (rolePath) => ({ rolePath }),
    }),
  ],
};
