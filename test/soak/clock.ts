// Soak time: the real clock plus an offset that only grows, shared by the soak's process and
// every Lambda container (a SharedArrayBuffer). A clock fault skips it forward while nothing is
// in flight, so what waits on time in minutes (the reconciler taking a lost hand-off chain for
// lost, a lifecycle hook's heartbeat timeout, a deferral's maximum) comes within a short soak.
// The handler, the token webhook and the AWS stand-ins read soak time through Date; the API
// server, kwok and the audit log keep real time. Between the handler and the API server the
// fault proxy moves every timestamp field by the offset (shiftTimestamps), so what the server
// stamps (a pod's deletion, its start, a condition's transition) ages in real time, as kwok's
// pods do, and the handler and the server never disagree on the time; the skip log converts
// the audit log's times.

export interface SoakClock {
  /** Shared with the Lambda containers (installSoakClock in each). */
  readonly buffer: SharedArrayBuffer;
  /** The machine's clock, whatever the skips. */
  realNow(): number;
  /** Soak time: what Date.now() says in this process once installed. */
  now(): number;
  offsetMs(): number;
  /** Moves soak time forward (the soak's process only). */
  skip(ms: number): void;
  /** Each skip: when (real time) and the offset from then on. */
  readonly skips: readonly { readonly atRealMs: number; readonly offsetMs: number }[];
  /** A soak-time instant as real time (the audit log's). */
  toReal(soakMs: number): number;
}

const RealDate = globalThis.Date;
const realNow = RealDate.now.bind(RealDate);
let installed: SharedArrayBuffer | undefined;

/**
 * Makes Date read soak time in this thread (a new buffer in the soak's process; the process's
 * own in each container). Idempotent for the same buffer.
 */
export function installSoakClock(buffer = new SharedArrayBuffer(8)): SoakClock {
  const cell = new BigInt64Array(buffer);
  const offset = () => Number(Atomics.load(cell, 0));
  if (installed === undefined) {
    const now = () => realNow() + offset();
    globalThis.Date = new Proxy(RealDate, {
      construct: (target, args, newTarget) => Reflect.construct(target, args.length > 0 ? args : [now()], newTarget),
      apply: () => new RealDate(now()).toString(),
      get: (target, property, receiver) => (property === 'now' ? now : Reflect.get(target, property, receiver)),
    });
    installed = buffer;
  } else if (installed !== buffer) {
    throw new Error('a soak clock is already installed in this thread with another buffer');
  }
  const skips: { atRealMs: number; offsetMs: number }[] = [];
  return {
    buffer,
    realNow,
    now: () => realNow() + offset(),
    offsetMs: offset,
    skip(ms) {
      // Whole seconds: a timestamp keeps its fraction when shifted (shiftTimestamps).
      Atomics.add(cell, 0, BigInt(Math.round(ms / 1000) * 1000));
      skips.push({ atRealMs: realNow(), offsetMs: offset() });
    },
    skips,
    toReal(soakMs) {
      let applies = 0;
      for (const s of skips) if (s.atRealMs + s.offsetMs <= soakMs) applies = s.offsetMs;
      return soakMs - applies;
    },
  };
}

/** Timestamp fields of Kubernetes objects: metadata, pod and container status, conditions, Events, managedFields. */
const timestampFields = [
  'creationTimestamp',
  'deletionTimestamp',
  'startTime',
  'lastTransitionTime',
  'lastHeartbeatTime',
  'lastProbeTime',
  'lastUpdateTime',
  'eventTime',
  'firstTimestamp',
  'lastTimestamp',
  'time',
  'startedAt',
  'finishedAt',
  'renewTime',
  'acquireTime',
];
const stamped = new RegExp(
  `"(${timestampFields.join('|')})":"(\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2})(\\.\\d+)?Z"`,
  'g',
);

/**
 * Moves every timestamp field of a JSON text by whole seconds (answers into soak time, requests
 * back into real time). Values inside strings, such as our own records in annotations, are
 * escaped (\"startedAt\") and left alone: they are soak time already.
 */
export function shiftTimestamps(text: string, byMs: number): string {
  if (byMs === 0) return text;
  return text.replace(stamped, (_match, key: string, base: string, fraction: string | undefined) => {
    const shifted = new Date(Date.parse(`${base}Z`) + byMs).toISOString().slice(0, 19);
    return `"${key}":"${shifted}${fraction ?? ''}Z"`;
  });
}
