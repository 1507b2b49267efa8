// The notification path: the construct's one customer managed key, the topic every lifecycle
// hook notifies (hand-offs go through it too), and the queue of notifications the drainer
// could not process. Built in the construct's own scope: their logical IDs are its oldest
// public contract.
import { Duration, aws_iam as iam, aws_kms as kms, aws_sns as sns, aws_sqs as sqs } from 'aws-cdk-lib';
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
