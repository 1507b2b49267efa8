// The notification path: the construct's one customer managed key, the topic every lifecycle
// hook notifies (hand-offs go through it too), and the queue of notifications the drainer
// could not process. Built in the construct's own scope: their logical IDs are its oldest
// public contract.
import {
  ArnFormat,
  Duration,
  Stack,
  aws_iam as iam,
  aws_kms as kms,
  aws_sns as sns,
  aws_sqs as sqs,
} from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { acknowledgeNag } from './nag.js';
import type { Settings } from './settings.js';

export interface Notifications {
  readonly key: kms.Key;
  readonly topic: sns.Topic;
  readonly failedNotifications: sqs.Queue;
}

export function createNotifications(scope: Construct, id: string, settings: Settings): Notifications {
  const key = new kms.Key(scope, 'Key', {
    description: `Encrypts the lifecycle notifications and failed notifications of ${id}`,
    enableKeyRotation: true,
    removalPolicy: settings.removalPolicy,
  });
  allowLogsToUse(key);
  const topic = new sns.Topic(scope, 'Topic', {
    masterKey: key,
    enforceSSL: true,
    displayName: 'Node group lifecycle notifications',
  });
  const failedNotifications = new sqs.Queue(scope, 'FailedNotifications', {
    encryption: sqs.QueueEncryption.KMS,
    encryptionMasterKey: key,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
    removalPolicy: settings.removalPolicy,
  });
  acknowledgeNag(
    failedNotifications,
    'SQS3',
    'This queue is itself the on-failure (dead-letter) destination of the function.',
  );
  return { key, topic, failedNotifications };
}

/**
 * The functions' log groups are encrypted with the key too (what they log names nodes, pods and
 * budgets): CloudWatch Logs of this region may use it for this account's log groups. The log
 * groups' own ARNs cannot be named here (they reference the key), hence `log-group:*`.
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html
 */
function allowLogsToUse(key: kms.Key): void {
  const stack = Stack.of(key);
  key.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'CloudWatchLogsOfThisAccount',
      principals: [new iam.ServicePrincipal(`logs.${stack.region}.amazonaws.com`)],
      actions: ['kms:Encrypt*', 'kms:Decrypt*', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:Describe*'],
      resources: ['*'],
      conditions: {
        ArnLike: {
          'kms:EncryptionContext:aws:logs:arn': stack.formatArn({
            service: 'logs',
            resource: 'log-group',
            resourceName: '*',
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          }),
        },
      },
    }),
  );
}

/**
 * Only the hook role (notifications) and the drainer (its own hand-offs) may publish: a forged
 * notification must not reach the drainer.
 */
export function allowPublishOnlyBy(topic: sns.ITopic, ...roles: iam.IRole[]): void {
  topic.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'PublishOnlyByTheHookRole',
      effect: iam.Effect.DENY,
      principals: [new iam.AnyPrincipal()],
      actions: ['sns:Publish'],
      resources: [topic.topicArn],
      conditions: { ArnNotEquals: { 'aws:PrincipalArn': roles.map((role) => role.roleArn) } },
    }),
  );
}
