// Karpenter's `karpenter.sh/do-not-disrupt` pod annotation, read as Karpenter 1.12 reads it:
// "true", or a Go duration ("90m", "1h30m") that protects the pod from when it was bound to its
// node until the duration has passed; any other value is ignored (Karpenter tells it in an Event).
// https://github.com/kubernetes-sigs/karpenter/pull/2874
import type { PodInfo } from '../model.js';

export const doNotDisruptAnnotation = 'karpenter.sh/do-not-disrupt';

const unitMs: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
};

/** A Go time.Duration string in milliseconds (undefined: not one). */
export function parseGoDurationMs(raw: string): number | undefined {
  const text = raw.trim();
  if (text === '0') return 0;
  const match = /^([-+]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/.exec(text);
  if (match === null) return undefined;
  let total = 0;
  for (const part of match[2]!.matchAll(/(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g))
    total += Number(part[1]) * unitMs[part[2]!]!;
  return match[1] === '-' ? -total : total;
}

/**
 * Until when the annotation protects the pod: Infinity for "true", the bind time plus the duration
 * for a duration, undefined for a value Karpenter ignores. A pod not yet bound counts from `nowMs`, the
 * caller's clock (never the machine's: the rules are a function of the moment they are asked about).
 */
export function doNotDisruptUntilMs(pod: Pick<PodInfo, 'startedAt'>, value: string, nowMs: number): number | undefined {
  if (value === 'true') return Number.POSITIVE_INFINITY;
  const ms = parseGoDurationMs(value);
  if (ms === undefined) return undefined;
  return (pod.startedAt?.getTime() ?? nowMs) + ms;
}

/** The value is one Karpenter would ignore (shown by `check`). */
export const isIgnoredDoNotDisrupt = (value: string | undefined): boolean =>
  value !== undefined && value !== 'true' && parseGoDurationMs(value) === undefined;
