// Whether a drain whose hand-off chain was lost is resumed before Auto Scaling gives up on its
// lifecycle action: one rule for the reconciler (when a chain counts as lost), the cold-start
// check (config-checks.ts) and the construct (its schedule, or its refusal).
//
// The worst case: the chain is lost right after its last write (a hand-off's claim, or the
// record an invocation writes as it starts), which came with its last heartbeat, so the hook's
// timer runs out H after that write. An invocation hands on after at most one stretch S
// (0.8 x H, or Lambda's 15 minutes less the margin), so "no write for S plus the hand-off
// margin" is the lost signal. The first pass after that comes at most one schedule interval I
// later and heartbeats within the pass margin. Resumed in time iff S + 30 s + I + 60 s <= H.

/** Lambda's longest invocation, the drainer's timeout. */
export const invocationSeconds = 15 * 60;
/** An invocation hands on after this share of the heartbeat timeout (termination/deadlines.ts). */
export const handOffShare = 0.8;
/** Between one invocation's last write and the next one's first: the drain loop's overrun, SNS, a cold start. */
export const handOffMarginSeconds = 30;
/** From a pass's scheduled time to its heartbeat: EventBridge's one-minute precision, then the pass's reads. */
export const passMarginSeconds = 60;
/** EventBridge rates are whole minutes, one at the least. */
export const shortestIntervalMinutes = 1;
/** The schedule a deployment gets unless it chooses one, when it fits. */
export const defaultIntervalMinutes = 5;
/** Auto Scaling's range for HeartbeatTimeout. */
export const heartbeatRangeSeconds = { min: 30, max: 7200 } as const;

export interface ResumeTimes {
  readonly heartbeatTimeoutSeconds: number;
  readonly invocationMarginSeconds: number;
}

/** The longest a live chain goes without a write: one invocation's stretch before it hands on. */
export function stretchSeconds(t: ResumeTimes): number {
  return Math.min(invocationSeconds - t.invocationMarginSeconds, t.heartbeatTimeoutSeconds * handOffShare);
}

/** A drain with no write for longer than this lost its hand-off chain. */
export function staleAfterSeconds(t: ResumeTimes): number {
  return stretchSeconds(t) + handOffMarginSeconds;
}

/** The latest a pass resumes a chain lost right after its last write, counted from that write. */
export function latestResumeSeconds(t: ResumeTimes, intervalMinutes: number): number {
  return staleAfterSeconds(t) + intervalMinutes * 60 + passMarginSeconds;
}

/** The longest schedule, in whole minutes, that resumes in time; 0 when not even one minute does. */
export function longestIntervalMinutes(t: ResumeTimes): number {
  return Math.max(0, Math.floor((t.heartbeatTimeoutSeconds - staleAfterSeconds(t) - passMarginSeconds) / 60));
}

/** Five minutes, or the longest schedule that fits when that is shorter; 0 when none fits. */
export function defaultInterval(t: ResumeTimes): number {
  return Math.min(defaultIntervalMinutes, longestIntervalMinutes(t));
}

/** The shortest heartbeat timeout (whole seconds) under which a schedule of this many minutes resumes in time. */
export function shortestHeartbeatSeconds(intervalMinutes: number, invocationMarginSeconds: number): number | undefined {
  // Monotonic: H - S(H) never falls as H grows, so the first fit is the answer.
  for (let h = heartbeatRangeSeconds.min; h <= heartbeatRangeSeconds.max; h++) {
    if (latestResumeSeconds({ heartbeatTimeoutSeconds: h, invocationMarginSeconds }, intervalMinutes) <= h) return h;
  }
  return undefined;
}
