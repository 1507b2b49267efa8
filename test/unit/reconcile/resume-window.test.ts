// A lost hand-off chain is resumed before Auto Scaling ends the action (issue 27, item 8): the
// reconciler's staleness and schedule follow from the heartbeat timeout, and a combination in
// which no pass can come in time is refused at cold start. Played with the real handler on
// the fakes: the chain is lost right after its last write (which came with its last
// heartbeat), the passes come at every phase of the schedule.
import { describe, expect, it } from 'vitest';
import type { DrainRecord } from '../../../lambda/cluster/model.js';
import { parseConfig } from '../../../lambda/shared/config.js';
import { lifecycleDeadlines } from '../../../lambda/termination/deadlines.js';
import { handlerWorld } from '../../fakes/fake-world.js';
import { scheduledEvent } from '../../fixtures/deliveries.js';
import { gntAOwner, handOffDeploymentEnv, instanceId } from '../../fixtures/notifications.js';
import { lifecycleAction } from '../../fixtures/drain-sources.js';

/** From a pass's scheduled time to its heartbeat: EventBridge's minute of precision, the pass's reads. */
const passMarginMs = 60_000;

function lostChain(env: Record<string, string>) {
  const world = handlerWorld(env);
  const lastWriteMs = world.clock.now();
  const record: DrainRecord = {
    source: lifecycleAction('sha256:ab', 'workers-terminate'),
    notifiedAtMs: lastWriteMs,
    startedAtMs: lastWriteMs,
    updatedAtMs: lastWriteMs,
    set: ['cordon'],
  };
  world.groups.set(instanceId, 'workers');
  world.terminating.add(instanceId);
  world.cluster.addNode('node-a', instanceId, {
    unschedulable: true,
    labels: gntAOwner,
    drain: record,
    handOffClaim: 'sha256:ab/3/request-9',
  });
  const handle = world.handler();
  const pass = async (atMs: number) => {
    world.clock.advanceTo(atMs);
    await world.invokeRaw(handle, scheduledEvent());
    return world.handOffs.sent.length > 0;
  };
  return { lastWriteMs, pass };
}

/** When the first pass of a schedule with this phase resumes the chain, or undefined. */
async function resumedAt(
  env: Record<string, string>,
  intervalMs: number,
  phaseMs: number,
  untilMs: number,
): Promise<number | undefined> {
  const { lastWriteMs, pass } = lostChain(env);
  for (let at = lastWriteMs + phaseMs; at - lastWriteMs <= untilMs; at += intervalMs)
    if (await pass(at)) return at - lastWriteMs;
  return undefined;
}

describe('resuming a lost hand-off chain', () => {
  it('comes before the heartbeat timeout runs out, at every phase of the schedule the deployment gets, for heartbeat timeouts from 750 s to 2 h', async () => {
    for (const heartbeat of [750, 900, 1000, 1200, 1269, 1270, 1800, 3600, 7200]) {
      const env = { ...handOffDeploymentEnv, HEARTBEAT_TIMEOUT_SECONDS: String(heartbeat) };
      const minutes = parseConfig(env).reconcileIntervalMinutes;
      expect(minutes, `the schedule for ${heartbeat} s`).toBeGreaterThanOrEqual(1);
      const intervalMs = minutes * 60_000;
      for (let phaseMs = 0; phaseMs < intervalMs; phaseMs += 10_000) {
        const at = await resumedAt(env, intervalMs, phaseMs, heartbeat * 1000 + intervalMs);
        expect(at, `heartbeat ${heartbeat} s, every ${minutes} min, phase ${phaseMs / 1000} s`).toBeDefined();
        expect(
          at! + passMarginMs,
          `heartbeat ${heartbeat} s, every ${minutes} min, phase ${phaseMs / 1000} s`,
        ).toBeLessThanOrEqual(heartbeat * 1000);
      }
    }
  });

  it('never resumes a live chain: nothing written for one invocation stretch and 29 s is not yet lost', async () => {
    for (const heartbeat of [750, 1000, 1800, 7200]) {
      const env = { ...handOffDeploymentEnv, HEARTBEAT_TIMEOUT_SECONDS: String(heartbeat) };
      // The stretch as the drain's own plan has it: it hands on then, in a 15-minute invocation.
      const plan = lifecycleDeadlines(parseConfig(env), {
        notifiedAtMs: 0,
        nowMs: 0,
        invocationEndMs: 900_000,
        canHandOff: true,
      });
      const { lastWriteMs, pass } = lostChain(env);
      expect(await pass(lastWriteMs + plan.invocationStopMs + 29_000), `heartbeat ${heartbeat} s`).toBe(false);
      expect(await pass(lastWriteMs + plan.invocationStopMs + 31_000), `heartbeat ${heartbeat} s`).toBe(true);
    }
  });

  it('refuses at cold start a heartbeat timeout no schedule can resume in (120 s), naming the variables and the range', () => {
    const env = { ...handOffDeploymentEnv, HEARTBEAT_TIMEOUT_SECONDS: '120', LAUNCH_TIMEOUT_SECONDS: '60' };
    expect(() => parseConfig(env)).toThrow(
      /HEARTBEAT_TIMEOUT_SECONDS \(120\) lets Auto Scaling end an action before the reconciler can resume .* under any schedule: use HEARTBEAT_TIMEOUT_SECONDS of at least 750 \(with RECONCILE_INTERVAL_MINUTES=1\), or RECONCILE_MARKS=false/,
    );
    // Nothing is promised without the reconciler, or without a topic to resume through.
    expect(parseConfig({ ...env, RECONCILE_MARKS: 'false' }).heartbeatTimeoutSeconds).toBe(120);
    expect(parseConfig({ ...env, HAND_OFF_TOPIC_ARN: '' }).heartbeatTimeoutSeconds).toBe(120);
  });

  it('refuses at cold start a schedule too long for the heartbeat timeout, and derives one that fits when unset', () => {
    const env = (heartbeat: number, minutes?: number) => ({
      ...handOffDeploymentEnv,
      HEARTBEAT_TIMEOUT_SECONDS: String(heartbeat),
      ...(minutes === undefined ? {} : { RECONCILE_INTERVAL_MINUTES: String(minutes) }),
    });
    expect(() => parseConfig(env(1200, 5))).toThrow(
      /HEARTBEAT_TIMEOUT_SECONDS \(1200\) with RECONCILE_INTERVAL_MINUTES \(5\) lets Auto Scaling end an action .*: use RECONCILE_INTERVAL_MINUTES from 1 to 3, HEARTBEAT_TIMEOUT_SECONDS of at least 1270, or RECONCILE_MARKS=false/,
    );
    expect(() => parseConfig(env(1800, 14))).toThrow(/use RECONCILE_INTERVAL_MINUTES from 1 to 13/);
    expect(parseConfig(env(1800, 13)).reconcileIntervalMinutes).toBe(13);
    expect([750, 900, 1200, 1270, 1800, 7200].map((h) => parseConfig(env(h)).reconcileIntervalMinutes)).toEqual([
      1, 1, 3, 5, 5, 5,
    ]);
  });
});
