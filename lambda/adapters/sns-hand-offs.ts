// Hand-offs travel through the hooks' own SNS topic: the next invocation gets the same
// delivery as an Auto Scaling notification (asynchronous, retried twice, then kept in the
// failed-notifications queue), with no new resource to run or secure.
import { PublishCommand, type SNSClient } from '@aws-sdk/client-sns';
import type { HandOffs } from '../ports.js';

export function createSnsHandOffs(client: SNSClient, topicArn: string): HandOffs {
  return {
    async send(message) {
      await client.send(new PublishCommand({ TopicArn: topicArn, Message: JSON.stringify(message) }));
    },
  };
}
