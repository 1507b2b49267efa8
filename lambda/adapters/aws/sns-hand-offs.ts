// Hand-offs travel through the hooks' own SNS topic: the next invocation gets the same
// delivery as an Auto Scaling notification (asynchronous, retried twice, then kept in the
// failed-notifications queue), with no new resource to run or secure.
import type { SNSClientConfig } from '@aws-sdk/client-sns';
import type { HandOffs } from '../../shared/aws-ports.js';

/** The SNS client is loaded on the first hand-off only: most drains never need it (cold start). */
export function createSnsHandOffs(config: SNSClientConfig, topicArn: string): HandOffs {
  let client: Promise<{ publish(message: string): Promise<unknown> }> | undefined;
  const load = async () => {
    const { SNSClient, PublishCommand } = await import('@aws-sdk/client-sns');
    const sns = new SNSClient(config);
    return { publish: (message: string) => sns.send(new PublishCommand({ TopicArn: topicArn, Message: message })) };
  };
  return {
    async send(message) {
      client ??= load();
      await (await client).publish(JSON.stringify(message));
    },
  };
}
