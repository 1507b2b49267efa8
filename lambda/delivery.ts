// Every shape a lifecycle notification (or a Spot warning) can reach this function in, turned
// into one list of deliveries. Users point an existing EventBridge rule or an SQS hook target
// (the aws-node-termination-handler setup) at the function as often as they use our SNS
// topic; a shape we do not know must fail loudly (retried, alarmed), never succeed empty.
// Shapes: https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-event-reference.html
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/rebalance-recommendations.html

export type Delivery =
  /** A lifecycle message (SNS Message, SQS body, EventBridge detail): parsed by lifecycle-event.ts. */
  | { readonly kind: 'lifecycle'; readonly via: 'sns' | 'sqs' | 'eventbridge'; readonly id: string | undefined; readonly message: unknown; readonly field: string }
  /** EC2 reclaims this Spot instance in two minutes from `time`. */
  | { readonly kind: 'spot-interruption'; readonly instanceId: string; readonly time: Date; readonly id: string | undefined }
  /** EC2 says this Spot instance is at elevated risk of interruption. */
  | { readonly kind: 'rebalance-recommendation'; readonly instanceId: string; readonly time: Date; readonly id: string | undefined }
  /** An instance refresh of a group began (EventBridge, best effort): mark its outdated nodes. */
  | { readonly kind: 'refresh-started'; readonly group: string; readonly refreshId: string; readonly id: string | undefined }
  /** It ended (succeeded, failed, cancelled, rolled back or rolling back): take our marks back. */
  | { readonly kind: 'refresh-ended'; readonly group: string; readonly refreshId: string; readonly outcome: string; readonly id: string | undefined }
  /** Worth a log line, nothing to do (a checkpoint reached). */
  | { readonly kind: 'refresh-progress'; readonly group: string; readonly refreshId: string; readonly what: string; readonly id: string | undefined }
  /** A record or event we cannot use, with why. */
  | { readonly kind: 'malformed'; readonly field: string; readonly reason: string; readonly id: string | undefined };

/** The invocation is nothing we know: it must fail (Lambda retries, the errors alarm fires). */
export class UnsupportedEventError extends Error {
  constructor(readonly shape: string) {
    super(`unsupported event shape: ${shape}; expected SNS or SQS records of lifecycle notifications, an EventBridge lifecycle action, a Spot interruption warning, a rebalance recommendation or an instance refresh event`);
    this.name = 'UnsupportedEventError';
  }
}

const lifecycleDetailTypes: ReadonlySet<string> = new Set(['EC2 Instance-launch Lifecycle Action', 'EC2 Instance-terminate Lifecycle Action']);

/**
 * Instance refresh events and what they mean for our marks. A rollback replaces the new
 * instances with the old configuration: the forward refresh's marks go when it starts.
 * https://docs.aws.amazon.com/autoscaling/ec2/userguide/instance-refresh-eventbridge-events.html
 */
const refreshEvents: Readonly<Record<string, 'started' | 'progress' | string>> = {
  'EC2 Auto Scaling Instance Refresh Started': 'started',
  'EC2 Auto Scaling Instance Refresh Checkpoint Reached': 'progress',
  'EC2 Auto Scaling Instance Refresh Succeeded': 'succeeded',
  'EC2 Auto Scaling Instance Refresh Failed': 'failed',
  'EC2 Auto Scaling Instance Refresh Cancelled': 'cancelled',
  'EC2 Auto Scaling Instance Refresh Rollback Started': 'rolling back',
  'EC2 Auto Scaling Instance Refresh Rollback Succeeded': 'rolled back',
  'EC2 Auto Scaling Instance Refresh Rollback Failed': 'rollback failed',
};

export function toDeliveries(event: unknown): Delivery[] {
  if (!isObject(event)) throw new UnsupportedEventError(describeShape(event));
  if (Array.isArray(event['Records'])) return event['Records'].map(fromRecord);
  if (typeof event['detail-type'] === 'string') return [fromEventBridge(event)];
  throw new UnsupportedEventError(describeShape(event));
}

function fromRecord(record: unknown, index: number): Delivery {
  if (!isObject(record)) return { kind: 'malformed', field: `Records[${index}]`, reason: 'is not an object', id: undefined };
  if (isObject(record['Sns'])) {
    const sns = record['Sns'];
    const id = typeof sns['MessageId'] === 'string' ? sns['MessageId'] : undefined;
    return parseBody(sns['Message'], 'sns', 'Sns.Message', id);
  }
  if (record['eventSource'] === 'aws:sqs') {
    const id = typeof record['messageId'] === 'string' ? record['messageId'] : undefined;
    return parseBody(record['body'], 'sqs', 'body', id);
  }
  // An SNS record (or one that names no source at all) whose Sns object is missing.
  if (record['EventSource'] === 'aws:sns' || (record['EventSource'] === undefined && record['eventSource'] === undefined)) {
    return { kind: 'malformed', field: 'Sns', reason: 'is missing or not an object', id: undefined };
  }
  return { kind: 'malformed', field: `Records[${index}].eventSource`, reason: `is ${JSON.stringify(record['eventSource'] ?? record['EventSource'])}, expected aws:sns or aws:sqs`, id: undefined };
}

function parseBody(raw: unknown, via: 'sns' | 'sqs', field: string, id: string | undefined): Delivery {
  if (typeof raw !== 'string') return { kind: 'malformed', field, reason: 'is missing or not a string', id };
  let message: unknown;
  try {
    message = JSON.parse(raw);
  } catch (error) {
    return { kind: 'malformed', field, reason: `is not valid JSON (${(error as Error).message})`, id };
  }
  // An EventBridge event delivered through SQS or SNS (a rule whose target is a queue).
  if (isObject(message) && typeof message['detail-type'] === 'string') return fromEventBridge(message);
  return { kind: 'lifecycle', via, id, message, field };
}

function fromEventBridge(event: Record<string, unknown>): Delivery {
  const type = String(event['detail-type']);
  const id = typeof event['id'] === 'string' ? event['id'] : undefined;
  const detail = event['detail'];
  if (!isObject(detail)) return { kind: 'malformed', field: 'detail', reason: 'is missing or not an object', id };
  const time = new Date(typeof event['time'] === 'string' ? event['time'] : Number.NaN);
  if (lifecycleDetailTypes.has(type)) {
    // The detail is the lifecycle message without its Time: the event's time is when Auto Scaling sent it.
    return { kind: 'lifecycle', via: 'eventbridge', id, message: { Time: event['time'], ...detail }, field: 'detail' };
  }
  if (type === 'EC2 Spot Instance Interruption Warning' || type === 'EC2 Instance Rebalance Recommendation') {
    const instanceId = detail['instance-id'];
    if (typeof instanceId !== 'string' || !/^i-[0-9a-f]{8,17}$/.test(instanceId)) {
      return { kind: 'malformed', field: 'detail.instance-id', reason: `is ${JSON.stringify(instanceId)}, not an EC2 instance id`, id };
    }
    if (Number.isNaN(time.getTime())) return { kind: 'malformed', field: 'time', reason: `is ${JSON.stringify(event['time'])}, not an ISO 8601 time`, id };
    return { kind: type === 'EC2 Spot Instance Interruption Warning' ? 'spot-interruption' : 'rebalance-recommendation', instanceId, time, id };
  }
  const refresh = refreshEvents[type];
  if (refresh !== undefined) {
    const group = detail['AutoScalingGroupName'];
    const refreshId = detail['InstanceRefreshId'];
    if (typeof group !== 'string' || group === '') return { kind: 'malformed', field: 'detail.AutoScalingGroupName', reason: `is ${JSON.stringify(group)}, expected a group name`, id };
    if (typeof refreshId !== 'string' || refreshId === '') return { kind: 'malformed', field: 'detail.InstanceRefreshId', reason: `is ${JSON.stringify(refreshId)}, expected an instance refresh id`, id };
    if (refresh === 'started') return { kind: 'refresh-started', group, refreshId, id };
    if (refresh === 'progress') return { kind: 'refresh-progress', group, refreshId, what: type, id };
    return { kind: 'refresh-ended', group, refreshId, outcome: refresh, id };
  }
  throw new UnsupportedEventError(`EventBridge event with detail-type ${JSON.stringify(type)} from ${JSON.stringify(event['source'])}`);
}

function describeShape(event: unknown): string {
  if (!isObject(event)) return `a ${event === null ? 'null' : Array.isArray(event) ? 'JSON array' : typeof event} instead of an event object`;
  const keys = Object.keys(event).slice(0, 8);
  return `an object with keys ${keys.length > 0 ? keys.join(', ') : '(none)'}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
