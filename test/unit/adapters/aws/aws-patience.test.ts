// Throttled AWS calls are asked again for a while before they fail, and every call is counted
// (lambda/adapters/aws/aws-patience.ts).
import { describe, expect, it } from 'vitest';
import { AwsCallCount, isThrottled, isTransient, patient } from '../../../../lambda/adapters/aws/aws-patience.js';
import { ServiceBusyError } from '../../../../lambda/shared/errors.js';
import { budgetUntilMs, withinBudget } from '../../../../lambda/shared/time-budget.js';
import { FakeClock } from '../../../fakes/fake-world.js';

const throttling = () =>
  Object.assign(new Error('Rate exceeded'), { name: 'Throttling', $metadata: { httpStatusCode: 400 } });

describe('patience with throttling', () => {
  it('tells throttling from other failures, as the SDK and our Query client report it', () => {
    expect(isThrottled(throttling())).toBe(true);
    expect(
      isThrottled(new ServiceBusyError('ec2:DescribeInstances failed after 4 attempts: HTTP 503 RequestLimitExceeded')),
    ).toBe(true);
    expect(isThrottled(Object.assign(new Error('x'), { $retryable: { throttling: true } }))).toBe(true);
    expect(
      isThrottled(
        Object.assign(new Error('No active Lifecycle Action'), {
          name: 'ValidationError',
          $metadata: { httpStatusCode: 400 },
        }),
      ),
    ).toBe(false);
    expect(
      isThrottled(Object.assign(new Error('denied'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } })),
    ).toBe(false);
  });

  it('asks a throttled call again until it answers, counting every ask', async () => {
    const clock = new FakeClock();
    const count = new AwsCallCount();
    let fails = 3;
    const port = patient(
      { heartbeat: async () => (fails-- > 0 ? Promise.reject(throttling()) : 'recorded') },
      'autoscaling',
      { clock, count },
    );
    expect(await port.heartbeat()).toBe('recorded');
    expect(count.take()).toEqual({ autoscaling: 4 });
    expect(count.take()).toEqual({});
    expect(clock.now() - Date.parse('2026-11-22T10:00:00Z')).toBeLessThan(60_000);
  });

  it('gives up after its patience with one kind of error for the use cases, and never retries anything else', async () => {
    const clock = new FakeClock();
    const count = new AwsCallCount();
    const started = clock.now();
    const busy = patient({ complete: async () => Promise.reject(throttling()) }, 'autoscaling', {
      clock,
      count,
      patienceMs: 30_000,
    });
    await expect(busy.complete()).rejects.toBeInstanceOf(ServiceBusyError);
    expect(clock.now() - started).toBeLessThanOrEqual(30_000);
    count.take();
    const denied = patient(
      { complete: async () => Promise.reject(Object.assign(new Error('denied'), { name: 'AccessDenied' })) },
      'autoscaling',
      { clock, count },
    );
    await expect(denied.complete()).rejects.toThrow('denied');
    expect(count.take()).toEqual({ autoscaling: 1 });
  });

  it('asks again after a failure that says nothing about the request (a reset connection, a 5xx), and gives up with that error', async () => {
    const reset = () => Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET' });
    expect(isTransient(reset())).toBe(true);
    expect(
      isTransient(Object.assign(new Error('x'), { name: 'InternalFailure', $metadata: { httpStatusCode: 500 } })),
    ).toBe(true);
    expect(
      isTransient(
        Object.assign(new Error('No active Lifecycle Action'), {
          name: 'ValidationError',
          $metadata: { httpStatusCode: 400 },
        }),
      ),
    ).toBe(false);
    const clock = new FakeClock();
    const count = new AwsCallCount();
    let fails = 2;
    const flaky = patient(
      { complete: async () => (fails-- > 0 ? Promise.reject(reset()) : 'completed') },
      'autoscaling',
      { clock, count },
    );
    expect(await flaky.complete()).toBe('completed');
    expect(count.take()).toEqual({ autoscaling: 3 });
    // Still failing: the error as it came, after two more asks (seconds, not the whole patience).
    const down = patient({ complete: async () => Promise.reject(reset()) }, 'autoscaling', { clock, count });
    const started = clock.now();
    const error = await down.complete().catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(ServiceBusyError);
    expect(error).toMatchObject({ code: 'ECONNRESET' });
    expect(count.take()).toEqual({ autoscaling: 3 });
    expect(clock.now() - started).toBeLessThan(5_000);
    // Nobody listening (a wrong endpoint) does not pass: no second ask.
    const refused = patient(
      {
        complete: async () =>
          Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
      },
      'autoscaling',
      { clock, count },
    );
    await expect(refused.complete()).rejects.toThrow(/ECONNREFUSED/);
    expect(count.take()).toEqual({ autoscaling: 1 });
  });

  it('never retries past the time budget in force: a throttled call in the last seconds of an invocation gives up in time (issue 27)', async () => {
    const clock = new FakeClock();
    const count = new AwsCallCount();
    const started = clock.now();
    const busy = patient({ complete: async () => Promise.reject(throttling()) }, 'autoscaling', { clock, count });
    await expect(withinBudget(started + 5_000, () => busy.complete())).rejects.toBeInstanceOf(ServiceBusyError);
    expect(clock.now() - started).toBeLessThanOrEqual(5_000);
    // A tighter budget inside a looser one wins; the looser one cannot extend it.
    const nested = withinBudget(started + 60_000, () => withinBudget(started + 3_000, async () => budgetUntilMs()));
    expect(await nested).toBe(started + 3_000);
    expect(await withinBudget(started + 3_000, () => withinBudget(started + 60_000, async () => budgetUntilMs()))).toBe(
      started + 3_000,
    );
  });
});

// From the review of the wave change (dd06939; was test/unit/review/wave-review.test.ts).
describe('patience with a connection that is refused', () => {
  it('a permanent connection failure (ECONNREFUSED: wrong endpoint, no route) fails fast rather than after the whole patience', async () => {
    const clock = new FakeClock();
    const started = clock.now();
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' });
    const port = patient({ describe: async () => Promise.reject(refused) }, 'autoscaling', {
      clock,
      count: new AwsCallCount(),
    });
    await expect(port.describe()).rejects.toThrow('ECONNREFUSED');
    expect(clock.now() - started).toBeLessThan(10_000);
  });
});
