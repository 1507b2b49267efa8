// Routes each delivery to the trigger of its kind. One bad or failing record never stops the
// others; each record's log keys are reset by the logger before the next; each record's Events
// are written before the next begins. A new trigger is its own file and one line in `routes` (one
// that drains also its DrainSource case: docs/architecture.md#where-new-code-goes).
import type { ClusterGateway } from './cluster/ports/cluster-gateway.js';
import { describeEvent, toDeliveries, UnsupportedEventError, type Delivery } from './inbound/deliveries.js';
import { launchHook } from './launch/launch-hook.js';
import { rebalanceRecommendation } from './notices/rebalance-recommendation.js';
import { testNotification } from './notices/test-notification.js';
import { reconcileSchedule } from './reconcile/reconcile-schedule.js';
import { refreshEvent } from './refresh/refresh-event.js';
import { asError, type RecordLogger } from './shared/log.js';
import { withinBudget } from './shared/time-budget.js';
import { instanceTerminated } from './termination/instance-terminated.js';
import { spotInterruption } from './termination/spot-interruption.js';
import { answerChoice, type ChoiceAnswer } from './termination-policy/answer.js';
import { answerWithinMs, terminationChoice } from './termination-policy/termination-choice.js';
import { terminateHook } from './termination/terminate-hook.js';
import { route, type RecordStatus, type RouteResult, type TriggerContext } from './trigger.js';

/** Every trigger; each says which deliveries it takes. */
const routes = [
  route(terminateHook),
  route(launchHook),
  route(testNotification),
  route(spotInterruption),
  route(rebalanceRecommendation),
  route(refreshEvent),
  route(reconcileSchedule),
  route(terminationChoice),
  route(instanceTerminated),
];

export interface RouterDeps extends Omit<TriggerContext, 'invocation' | 'log'> {
  readonly log: RecordLogger;
}

export interface InvocationContext {
  getRemainingTimeInMillis(): number;
  /** The same in Lambda's own retries of an asynchronous invocation. */
  readonly awsRequestId?: string;
}

export type RecordResult = RouteResult;

export interface HandlerResult {
  readonly records: readonly RecordResult[];
  /** SQS records that failed, for an event source mapping with ReportBatchItemFailures: only they are retried. */
  readonly batchItemFailures?: readonly { readonly itemIdentifier: string }[];
}

/** Records that can never succeed: an SQS record of these is given back alone. */
const rejected: ReadonlySet<RecordStatus> = new Set(['malformed', 'unsupported']);

export function createRouter(
  deps: RouterDeps,
): (event: unknown, context: InvocationContext) => Promise<HandlerResult | ChoiceAnswer> {
  return async (event, context) => {
    const deliveries = deliveriesOf(event, deps.log);
    const requestId = context.awsRequestId ?? crypto.randomUUID();
    const invocation = { requestId, remainingMs: () => context.getRemainingTimeInMillis() };
    const [first] = deliveries;
    // Auto Scaling waits for the answer (two seconds): it is given whatever happens, never an error.
    if (first?.kind === 'termination-choice') {
      // Its retries stop where its answer is due, not where the invocation ends.
      const endMs = deps.clock.now() + lastRequestMs + answerWithinMs;
      const choice = {
        ...invocation,
        remainingMs: () => Math.min(context.getRemainingTimeInMillis(), endMs - deps.clock.now()),
      };
      return answerChoice(deps, first, (flushMs) => handleRecord(deps, first, 0, choice, () => undefined, flushMs));
    }
    const records: RecordResult[] = [];
    const errors: unknown[] = [];
    for (const [index, delivery] of deliveries.entries())
      records.push(await handleRecord(deps, delivery, index, invocation, (error) => errors.push(error)));
    return invocationResult(deliveries, records, errors);
  };
}

/** The invocation as deliveries; a shape nobody serves fails the whole invocation, loudly. */
function deliveriesOf(event: unknown, log: RecordLogger): Delivery[] {
  try {
    const deliveries = toDeliveries(event);
    // A direct EventBridge event nobody serves is the whole invocation: fail it loudly.
    const [only] = deliveries;
    if (only?.kind === 'event' && only.via === 'eventbridge' && !routes.some((r) => r.takes(only)))
      throw new UnsupportedEventError(describeEvent(only));
    return deliveries;
  } catch (error) {
    // Nothing we know: fail, so Lambda retries, the errors alarm fires and the event ends
    // in the failed-notifications queue, instead of an empty success nobody notices.
    if (error instanceof UnsupportedEventError) log.error('unsupported event shape', { shape: error.shape, error });
    throw error;
  }
}

/** What the invocation returns, or throws so that Lambda (or the queue) retries it. */
function invocationResult(deliveries: readonly Delivery[], records: RecordResult[], errors: unknown[]): HandlerResult {
  // A record that could not be handled (a transient failure: throttling, the cluster down)
  // fails the invocation: Lambda retries it (the SNS and EventBridge paths twice, then the
  // failure destination; an SQS batch until its dead-letter queue) and the Errors alarm
  // fires. Every record is idempotent, so the ones that went through are only repeated.
  const failed = records.filter((r) => r.status === 'failed').length;
  if (failed > 0) {
    throw errors.length === 1 && deliveries.length === 1
      ? errors[0]
      : new Error(`${failed} of ${deliveries.length} records failed; see the log lines before this one`, {
          cause: errors[0],
        });
  }
  // An SQS record nobody can ever use (malformed, of a kind we do not serve) fails alone, so
  // its queue keeps it for its dead-letter queue while the rest of the batch is done
  // (partial batch responses: the event source mapping's ReportBatchItemFailures).
  const sqsFailures = deliveries.flatMap((d, i) =>
    d.via === 'sqs' && d.id !== undefined && rejected.has(records[i]!.status) ? [{ itemIdentifier: d.id }] : [],
  );
  // The same on SNS or EventBridge: retrying cannot help, so it fails the invocation too
  // (the errors alarm, the failure destination keeps it).
  const otherRejected = deliveries.filter((d, i) => d.via !== 'sqs' && records[i]!.status === 'unsupported').length;
  if (otherRejected > 0)
    throw new Error(
      `${otherRejected} of ${deliveries.length} records are of a kind this function does not serve; ` +
        'see the log lines before this one',
    );
  return deliveries.some((d) => d.via === 'sqs') ? { records, batchItemFailures: sqsFailures } : { records };
}

/** One AWS request's longest time (runtime.ts: requestTimeout 10 s) and a little more. */
export const lastRequestMs = 12_000;

async function handleRecord(
  deps: RouterDeps,
  delivery: Delivery,
  index: number,
  invocation: TriggerContext['invocation'],
  failed: (error: unknown) => void,
  flushMs = 5_000,
): Promise<RecordResult> {
  const { log } = deps;
  log.resetKeys();
  if (delivery.kind === 'malformed') {
    // Logged, never retried from here: a retry would fail the same way.
    log.error('malformed record', {
      field: delivery.field,
      reason: delivery.reason,
      recordIndex: index,
      via: delivery.via,
      messageId: delivery.id,
    });
    return { status: 'malformed' };
  }
  const served = routes.find((r) => r.takes(delivery));
  if (served === undefined) {
    const shape = delivery.kind === 'event' ? describeEvent(delivery) : delivery.kind;
    log.error('unsupported record: this function does not serve this kind of event', {
      shape,
      recordIndex: index,
      via: delivery.via,
      messageId: delivery.id,
    });
    return { status: 'unsupported' };
  }
  let connected: ClusterGateway | undefined;
  const cluster = async () => (connected = await deps.cluster());
  const ctx: TriggerContext = { ...deps, cluster, invocation };
  try {
    // Retries give up while a last request still fits before Lambda ends the invocation.
    return await withinBudget(deps.clock.now() + invocation.remainingMs() - lastRequestMs, () =>
      served.run(delivery, ctx),
    );
  } catch (error) {
    log.error('record failed; it is retried', asError(error));
    failed(error);
    return { status: 'failed' };
  } finally {
    // Events are queued so they never hold a drain up; they are written before we go on.
    await connected?.flush?.(Math.max(0, Math.min(flushMs, invocation.remainingMs() - 2_000)));
  }
}
