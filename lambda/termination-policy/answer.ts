// What Auto Scaling gets back from a termination policy call, whatever happens: the decision
// when it came in time, else its own suggestion (fail open, logged, counted). Never an error
// and never silence: a function that fails or times out makes Auto Scaling wait and ask again,
// for as long as the scale-in lasts, which would stall it.
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/lambda-custom-termination-policy.html#lambda-termination-policy-considerations
import { choiceFailedOpenMessage } from '../cluster/events/log-messages.js';
import type { DeliveryOf } from '../inbound/deliveries.js';
import type { MetricsSink } from '../shared/aws-ports.js';
import type { RecordLogger } from '../shared/log.js';
import type { RouteResult } from '../trigger.js';
import { suggestedIds } from './payload.js';
import { answerWithinMs } from './termination-choice.js';

/** The response a custom termination policy gives. */
export interface ChoiceAnswer {
  readonly InstanceIDs: readonly string[];
  /** Never there: only lifecycle and event deliveries report their records. */
  readonly records?: undefined;
  readonly batchItemFailures?: undefined;
}

/** Events are written within this after the decision, inside the answer's time. */
export const choiceFlushMs = 250;

export async function answerChoice(
  deps: { readonly log: RecordLogger; readonly metrics: MetricsSink | undefined },
  delivery: DeliveryOf<'termination-choice'>,
  handle: (flushMs: number) => Promise<RouteResult>,
): Promise<ChoiceAnswer> {
  const fallback = suggestedIds(delivery.payload);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>(
    (resolve) => (timer = setTimeout(() => resolve('late'), answerWithinMs + choiceFlushMs)),
  );
  const result = await Promise.race([handle(choiceFlushMs), late]).finally(() => clearTimeout(timer));
  if (result !== 'late' && result.answer !== undefined) return { InstanceIDs: result.answer };
  const why = result === 'late' ? 'no decision in time' : `the request ended ${result.status}`;
  deps.log.error(choiceFailedOpenMessage, { why, answered: fallback.length });
  deps.metrics?.emit(
    { Transition: 'termination-policy', Outcome: 'failed-open' },
    { TerminationPolicyFailedOpen: { unit: 'Count', value: 1 } },
  );
  return { InstanceIDs: fallback };
}
