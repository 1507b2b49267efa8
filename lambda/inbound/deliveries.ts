// Every shape an event can reach this function in, turned into one list of deliveries: the
// transport (SNS, SQS, EventBridge) unwrapped, a lifecycle message classed by transition. Users point an existing
// EventBridge rule or an SQS hook target (the aws-node-termination-handler setup) at the function as often as they use
// our SNS topic. Which trigger takes a delivery is the trigger's own business (its `takes`); its payload is parsed by
// it too; here only the envelope is read. Shapes:
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-event-reference.html
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-run-lambda-schedule.html

/** `autoscaling`: Auto Scaling invoked the function itself, as a custom termination policy. */
export type Via = 'sns' | 'sqs' | 'eventbridge' | 'autoscaling';

interface Envelope {
  readonly via: Via;
  /** SNS MessageId, SQS messageId (a batch item failure names it), or the EventBridge event id. */
  readonly id: string | undefined;
}

/** An EventBridge event, however it came (directly, or through a queue or topic). */
export interface EventBridgeEvent extends Envelope {
  readonly detailType: string;
  readonly source: unknown;
  readonly time: unknown;
  readonly detail: Readonly<Record<string, unknown>>;
  readonly resources: unknown;
}

type LifecycleDelivery<K> = Envelope & {
  readonly kind: K;
  readonly message: Readonly<Record<string, unknown>>;
  readonly field: string;
};

export type Delivery =
  /** A lifecycle message (SNS Message, SQS body, EventBridge detail), by transition. */
  | LifecycleDelivery<'terminate'>
  | LifecycleDelivery<'launch'>
  | LifecycleDelivery<'test-notification'>
  /** Any other EventBridge event: the trigger that serves its detail-type takes it (router.ts). */
  | (EventBridgeEvent & { readonly kind: 'event' })
  /** Auto Scaling asks which instances to terminate (a custom termination policy): answered, never retried. */
  | (Envelope & { readonly kind: 'termination-choice'; readonly payload: Readonly<Record<string, unknown>> })
  /** A record or event we cannot use, with why: it fails alone, never the others. */
  | (Envelope & { readonly kind: 'malformed'; readonly field: string; readonly reason: string });

export type DeliveryKind = Delivery['kind'];
export type DeliveryOf<K extends DeliveryKind> = Extract<Delivery, { readonly kind: K }>;

/** The invocation is nothing we know: it must fail (Lambda retries, the errors alarm fires). */
export class UnsupportedEventError extends Error {
  constructor(readonly shape: string) {
    super(
      `unsupported event shape: ${shape}; expected SNS or SQS records of lifecycle notifications, an EventBridge ` +
        `lifecycle action, a Spot interruption warning, a rebalance recommendation, an instance refresh event, a ` +
        `scheduled event or a custom termination policy request`,
    );
    this.name = 'UnsupportedEventError';
  }
}

const lifecycleDetailTypes: ReadonlySet<string> = new Set([
  'EC2 Instance-launch Lifecycle Action',
  'EC2 Instance-terminate Lifecycle Action',
]);

/** A Map, not an object: a transition named `constructor` or `__proto__` must find nothing. */
const transitions: ReadonlyMap<string, 'terminate' | 'launch'> = new Map([
  ['autoscaling:EC2_INSTANCE_LAUNCHING', 'launch'],
  ['autoscaling:EC2_INSTANCE_TERMINATING', 'terminate'],
]);

/** The deliveries of one invocation; throws only when the invocation itself is of no known shape. */
export function toDeliveries(event: unknown): Delivery[] {
  if (!isObject(event)) throw new UnsupportedEventError(describeShape(event));
  if (Array.isArray(event['Records'])) return event['Records'].map(fromRecord);
  if (typeof event['detail-type'] === 'string') return [fromEventBridge(event, 'eventbridge')];
  // https://docs.aws.amazon.com/autoscaling/ec2/userguide/lambda-custom-termination-policy.html#lambda-custom-termination-policy-input-data
  if ('CapacityToTerminate' in event || ('AutoScalingGroupName' in event && 'Instances' in event && 'Cause' in event)) {
    return [{ kind: 'termination-choice', payload: event, via: 'autoscaling', id: undefined }];
  }
  throw new UnsupportedEventError(describeShape(event));
}

/** How an event nobody takes is named in the log and the error. */
export function describeEvent(d: EventBridgeEvent): string {
  return `EventBridge event with detail-type ${JSON.stringify(d.detailType)} from ${JSON.stringify(d.source)}`;
}

function fromRecord(record: unknown, index: number): Delivery {
  if (!isObject(record))
    return { kind: 'malformed', field: `Records[${index}]`, reason: 'is not an object', id: undefined, via: 'sns' };
  if (isObject(record['Sns'])) {
    const sns = record['Sns'];
    return parseBody(
      sns['Message'],
      { via: 'sns', id: typeof sns['MessageId'] === 'string' ? sns['MessageId'] : undefined },
      'Sns.Message',
    );
  }
  if (record['eventSource'] === 'aws:sqs') {
    return parseBody(
      record['body'],
      { via: 'sqs', id: typeof record['messageId'] === 'string' ? record['messageId'] : undefined },
      'body',
    );
  }
  // An SNS record (or one that names no source at all) whose Sns object is missing.
  if (
    record['EventSource'] === 'aws:sns' ||
    (record['EventSource'] === undefined && record['eventSource'] === undefined)
  ) {
    return { kind: 'malformed', field: 'Sns', reason: 'is missing or not an object', id: undefined, via: 'sns' };
  }
  const source = JSON.stringify(record['eventSource'] ?? record['EventSource']);
  return {
    kind: 'malformed',
    field: `Records[${index}].eventSource`,
    reason: `is ${source}, expected aws:sns or aws:sqs`,
    id: undefined,
    via: 'sns',
  };
}

function parseBody(raw: unknown, envelope: Envelope, field: string): Delivery {
  if (typeof raw !== 'string') return { kind: 'malformed', field, reason: 'is missing or not a string', ...envelope };
  let message: unknown;
  try {
    message = JSON.parse(raw);
  } catch (error) {
    return { kind: 'malformed', field, reason: `is not valid JSON (${(error as Error).message})`, ...envelope };
  }
  if (!isObject(message)) return { kind: 'malformed', field, reason: 'is not a JSON object', ...envelope };
  // An EventBridge event delivered through SQS or SNS (a rule whose target is a queue).
  if (typeof message['detail-type'] === 'string') return fromEventBridge(message, envelope.via, envelope.id);
  return fromLifecycleMessage(message, envelope, field);
}

function fromLifecycleMessage(message: Record<string, unknown>, envelope: Envelope, field: string): Delivery {
  if (message['Event'] === 'autoscaling:TEST_NOTIFICATION')
    return { kind: 'test-notification' as const, message, field, ...envelope };
  const transition = message['LifecycleTransition'];
  if (typeof transition !== 'string')
    return { kind: 'malformed', field: 'LifecycleTransition', reason: 'is missing or not a string', ...envelope };
  const kind = transitions.get(transition);
  if (kind === undefined) {
    return {
      kind: 'malformed',
      field: 'LifecycleTransition',
      reason: `is ${JSON.stringify(transition)}, expected one of ${[...transitions.keys()].join(', ')}`,
      ...envelope,
    };
  }
  return { kind, message, field, ...envelope } as Delivery;
}

function fromEventBridge(event: Record<string, unknown>, via: Via, outerId?: string): Delivery {
  const detailType = String(event['detail-type']);
  const id = outerId ?? (typeof event['id'] === 'string' ? event['id'] : undefined);
  const envelope = { via, id };
  const detail = event['detail'];
  if (!isObject(detail))
    return { kind: 'malformed', field: 'detail', reason: 'is missing or not an object', ...envelope };
  if (lifecycleDetailTypes.has(detailType)) {
    // The detail is the lifecycle message without its Time: the event's time is when Auto Scaling sent it.
    return fromLifecycleMessage({ Time: event['time'], ...detail }, { via, id }, 'detail');
  }
  return {
    kind: 'event',
    detailType,
    source: event['source'],
    time: event['time'],
    detail,
    resources: event['resources'],
    ...envelope,
  };
}

function describeShape(event: unknown): string {
  if (!isObject(event)) {
    const what = event === null ? 'null' : Array.isArray(event) ? 'JSON array' : typeof event;
    return `a ${what} instead of an event object`;
  }
  const keys = Object.keys(event).slice(0, 8);
  return `an object with keys ${keys.length > 0 ? keys.join(', ') : '(none)'}`;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
