// docs/limits.md quotes retry counts, budgets and bounds: each number quoted is the code's, read
// from where the code defines it, so the page cannot drift from what the handler does.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { throttledPatienceMs, transientRetries } from '../../../lambda/adapters/aws/aws-patience.js';
import { elbCallSpacingMs, elbConcurrency } from '../../../lambda/adapters/aws/load-balancers.js';
import { namedPollMs } from '../../../lambda/adapters/kubernetes/named-attachments.js';
import { lastRequestMs } from '../../../lambda/router.js';
import { callBudget, pollIntervalMs } from '../../../lambda/termination/target-wait-pace.js';
import { minReadIntervalMs } from '../../../lambda/termination/shared-targets.js';
import {
  elbReadsPerSecond,
  maxBackoffMs,
  minReadsPerSecond,
  recoverEveryMs,
} from '../../../lambda/termination/reader-pace.js';
import { surveyPatienceMs } from '../../../lambda/termination/siblings.js';

const limits = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'limits.md'), 'utf8').replace(
  /\s+/g,
  ' ',
);
const words = ['', 'once', 'twice'];

describe('docs/limits.md states what the code does', () => {
  it('the patience with throttled and failing AWS calls', () => {
    expect(throttledPatienceMs).toBe(60_000);
    expect(limits).toContain('Throttled AWS calls are asked again for up to a minute');
    expect(limits).toContain(`A reset connection or a 5xx is asked again ${words[transientRetries]}`);
    expect(limits).toContain(`No retry runs past the invocation's end less ${lastRequestMs / 1000} s`);
    expect(limits).toContain(`the best-effort sibling survey's calls give up after ${surveyPatienceMs / 1000} s`);
  });

  it('the settle phase’s bounds', () => {
    expect(limits).toContain(`a termination's wait makes at most ${callBudget} ELB calls`);
    expect(limits).toContain(`one GET each every ${namedPollMs / 1000} s`);
    expect(limits).toContain(
      `Each reading has at most ${elbConcurrency} calls in flight and starts them at least ${elbCallSpacingMs} ms apart`,
    );
    expect(limits).toContain(`at most ${elbReadsPerSecond} ELB calls a second`);
    expect(limits).toContain(`each group read at most every ${minReadIntervalMs / 1000} s`);
    expect(limits).toContain(`(every \`groups / ${elbReadsPerSecond}\` s when more are wanted)`);
    expect(limits).toContain(
      `backing off 2 s doubling to ${maxBackoffMs / 1000} s and halving its rate (to ${minReadsPerSecond} call a second ` +
        `at the least), one call a second given back each ${recoverEveryMs / 1000} s`,
    );
    // Looks grow to 10 s apart, 12 s with the jitter.
    expect(pollIntervalMs(30, () => 1)).toBe(12_000);
    expect(limits).toContain('Looks grow up to 10 s apart (12 s with jitter)');
  });
});
