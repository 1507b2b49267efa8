// A drain at one generated moment, built as drain-node.ts builds it (pass-view.ts): generated pods and drain rules,
// deadlines and windows as termination/deadlines.ts makes them, and what the drain has tried so far.
import { fc } from '@fast-check/vitest';
import { passView, type PassOptions } from '../../lambda/eviction/pass-view.js';
import type { Attempt } from '../../lambda/eviction/rules.js';
import { DeadlinePolicy } from '../../lambda/shared/deadline-policy.js';
import { drainRuleSettingsArb, podsArb, t0 } from './arbitraries.js';

const minute = 60_000;

/** A drain as drain-node.ts runs it: the options fixed for the run, the state of one pass, and its view. */
export const drainArb = fc
  .record({
    pods: podsArb(10),
    rules: drainRuleSettingsArb,
    policy: fc.constantFrom(DeadlinePolicy.FORCE, DeadlinePolicy.LEAVE, DeadlinePolicy.RETAIN),
    startAgoMs: fc.integer({ min: 0, max: 60 * minute }),
    windowMs: fc.integer({ min: 0, max: 20 * minute }),
    deadlineAfterStartMs: fc.integer({ min: 0, max: 90 * minute }),
    capAfterDeadlineMs: fc.integer({ min: 0, max: 120 * minute }),
    batch: fc.option(
      fc.record({ untilAfterStartMs: fc.integer({ min: 0, max: 60 * minute }), extraMs: fc.nat(60 * minute) }),
      { nil: undefined },
    ),
    resumed: fc.boolean(),
    tried: fc.array(
      fc.record({
        index: fc.nat(9),
        count: fc.integer({ min: 1, max: 6 }),
        nextInMs: fc.integer({ min: -20_000, max: 20_000 }),
        blockedAgoMs: fc.option(fc.nat(10 * minute), { nil: undefined }),
        accepted: fc.boolean(),
      }),
      { maxLength: 6 },
    ),
    reachedAgoMs: fc.array(fc.tuple(fc.integer({ min: -3000, max: 3000 }), fc.nat(30 * minute)), { maxLength: 3 }),
  })
  .map((g) => {
    const nowMs = t0;
    const startMs = nowMs - g.startAgoMs;
    const drainDeadlineMs = startMs + g.deadlineAfterStartMs;
    const latestDrainEndMs = drainDeadlineMs + g.capAfterDeadlineMs;
    // As termination/deadlines.ts makes them: the batch wait and its deadline within the cap too.
    const batchUntilMs = Math.min(startMs + (g.batch?.untilAfterStartMs ?? 0), latestDrainEndMs);
    const options: PassOptions = {
      rules: g.rules,
      batch:
        g.batch === undefined
          ? undefined
          : { untilMs: batchUntilMs, deadlineMs: Math.min(batchUntilMs + g.batch.extraMs, latestDrainEndMs) },
      drainDeadlineMs,
      latestDrainEndMs,
      deadlinePolicy: g.policy,
      resumed: g.resumed,
      window: { startMs, endMs: startMs + g.windowMs },
    };
    const attempts = new Map<string, Attempt>();
    const accepted = new Set<string>();
    for (const t of g.tried) {
      const pod = g.pods[t.index];
      if (pod === undefined) continue;
      if (t.accepted) accepted.add(pod.uid);
      else
        attempts.set(pod.uid, {
          count: t.count,
          nextAtMs: nowMs + t.nextInMs,
          lastBlock: undefined,
          blockedSinceMs: t.blockedAgoMs === undefined ? undefined : nowMs - t.blockedAgoMs,
          reportedLong: false,
        });
    }
    const tierReachedMs = new Map(g.reachedAgoMs.map(([tier, ago]) => [tier, Math.max(startMs, nowMs - ago)]));
    const state = { pods: g.pods, nowMs, ignored: () => false, attempts, accepted, tierReachedMs };
    return { options, state, view: passView(options, state) };
  });
