// Phase 4, settle: after the pods are gone, the instance is released only when it is safe:
// the volumes of the pods that left are detached (settle-volumes.ts) and the load balancers
// have let it go (settle-targets.ts). Both waits run together and both must be over; pods
// that come back meanwhile are still noticed. Everything is re-derived from the cluster and
// AWS, dated from when the drain ended as our record keeps it, so a hand-off in the middle
// resumes the same wait.
import { waitWatching } from '../eviction/returned-pods.js';
import { drainDeadlineOf, drainedRecord, openPods } from './drain.js';
import { TargetWait } from './settle-targets.js';
import { VolumeWait } from './settle-volumes.js';
import { secondsSince, stopMs, type Drained, type Run, type Settled, type Step } from './state.js';

export async function settle(run: Run, d: Drained): Promise<Step<Settled>> {
  const { clock, log } = run.deps;
  const stopAtMs = stopMs(run, d.deadlines);
  const { watch, returns } = await openPods(run, d);
  const volumes = await VolumeWait.open(run, d, volumeWaitUntilMs(d));
  const targets = new TargetWait(run, d, stopAtMs);
  try {
    await volumes?.refresh(watch.current());
    await targets.look(clock.now());
    if (d.result !== undefined) {
      await targets.announce();
      await volumes?.announce();
    } else {
      log.info('still waiting for load balancers and volumes after the drain', {
        secondsSinceDrain: secondsSince(clock, d.drainedAtMs),
        volumesPending: volumes?.pending ?? false,
      });
    }
    for (let now = clock.now(); !(targets.done(now) && (volumes?.done(now) ?? true)); now = clock.now()) {
      if (now >= stopAtMs) {
        // What let go in this invocation is told now: the next one cannot know it was held.
        await Promise.all([volumes?.report({ final: false }), targets.report({ final: false })]);
        const record = {
          ...drainedRecord(d),
          ...(targets.reading() !== undefined ? { targets: targets.reading() } : {}),
        };
        return { stop: { handOff: 'settle', state: d, record, evictedTotal: d.evictedTotal, result: d.result } };
      }
      const wakeMs = Math.min(
        stopAtMs,
        targets.done(now) ? Infinity : targets.wakeMs(now),
        volumes !== undefined && !volumes.done(now) ? volumes.untilMs : Infinity,
      );
      // Waiting on the attachments while any holds (they decide), else on the pods.
      if (volumes?.pending) await volumes.changed(Math.max(0, wakeMs - now));
      else await waitWatching(watch, returns, wakeMs, clock);
      await returns.notice(watch.current());
      await volumes?.refresh(watch.current());
      await targets.look(clock.now());
      // Told as it happens, each once: what detached, what let go.
      await Promise.all([volumes?.report({ final: false }), targets.report({ final: false })]);
    }
    const [v, t] = [await volumes?.report({ final: true }), await targets.report({ final: true })];
    log.info('settled: the instance can go', {
      secondsSinceDrain: secondsSince(clock, d.drainedAtMs),
      loadBalancerCalls: targets.calls,
    });
    return {
      ...d,
      settle: {
        volumeDetachSeconds: v?.seconds,
        targetDeregistrationSeconds: t.seconds,
        loadBalancerCalls: targets.calls,
      },
    };
  } finally {
    volumes?.close();
    await targets.close();
  }
}

/**
 * Volumes are waited for within the drain deadline: the batch-extended one when the drain ran
 * past its base deadline while Jobs or do-not-disrupt pods finished (the only way it can), so a
 * batch drain's volumes are waited for too; never past the settle phase's end.
 */
export function volumeWaitUntilMs(d: Drained): number {
  const base = drainDeadlineOf(d.deadlines, d.record.startedAtMs);
  const extended =
    d.deadlines.batch !== undefined && d.drainedAtMs > base ? Math.max(base, d.deadlines.batch.deadlineMs) : base;
  return Math.min(extended, d.deadlines.settleEndMs ?? Infinity);
}
