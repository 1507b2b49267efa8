// The termination policy's deferral mark (deferralAnnotation): since when, and of which group.
import { type DeferralMark } from '../model.js';

export const formatDeferral = (m: DeferralMark): string =>
  JSON.stringify({ since: new Date(m.sinceMs).toISOString(), group: m.group });

export function parseDeferral(raw: string | undefined): DeferralMark | undefined {
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as Record<string, unknown>;
    const sinceMs = typeof v['since'] === 'string' ? Date.parse(v['since']) : Number.NaN;
    return Number.isNaN(sinceMs) || typeof v['group'] !== 'string' ? undefined : { sinceMs, group: v['group'] };
  } catch {
    return undefined;
  }
}
