// The termination policy's variables (termination-policy/): defined here, spread into the one
// list (config-variables.ts), so the construct, the handler and the docs' table share them.
import { isTimeZone, parseWindows, type Window } from './maintenance-windows.js';
import { variable, integer } from './variable.js';

export const choiceVariables = {
  terminationDeferralMaxSeconds: variable<number>({
    name: 'TERMINATION_DEFERRAL_MAX_SECONDS',
    description:
      'Custom termination policy: how long one scale-in (or rebalance, lifetime or refresh replacement) may be ' +
      "deferred because every candidate is costly or the maintenance window is closed; then Auto Scaling's own " +
      'choice stands. For an instance refresh at most 3000 (Auto Scaling fails a refresh that terminates nothing ' +
      'for an hour).',
    accepts: 'an integer from 0 to 86400',
    default: 300,
    parse: integer(0, 86_400),
    format: String,
  }),
  maintenanceWindows: variable<readonly Window[]>({
    name: 'MAINTENANCE_WINDOWS',
    description:
      'Custom termination policy, opt-in: voluntary terminations (scale-in, AZ rebalancing, maximum instance ' +
      'lifetime, instance refresh) only inside these windows, deferred outside them ' +
      '(TERMINATION_DEFERRAL_MAX_SECONDS, then Auto Scaling decides). Each window: a five-field cron expression ' +
      'for when it opens, `for` and a duration (m, h or d), in MAINTENANCE_TIME_ZONE; windows separated by `;`.',
    accepts: 'e.g. "0 22 * * MON-FRI for 6h; 0 0 * * SAT,SUN for 24h"',
    parse: (raw: string) => parseWindows(raw),
    format: (v: readonly Window[]) => v.map((w) => w.text).join('; '),
  }),
  maintenanceTimeZone: variable<string>({
    name: 'MAINTENANCE_TIME_ZONE',
    description: 'The time zone MAINTENANCE_WINDOWS are read in.',
    accepts: 'an IANA time zone name (Europe/Paris, America/New_York, UTC)',
    default: 'UTC',
    parse: (raw: string) => (isTimeZone(raw.trim()) ? raw.trim() : undefined),
    format: String,
  }),
} as const;

export interface ChoiceConfig {
  /** The longest one scale-in is deferred by the termination policy. */
  readonly terminationDeferralMaxSeconds: number;
  /** Voluntary terminations only inside these; undefined: any time. */
  readonly maintenanceWindows: readonly Window[] | undefined;
  readonly maintenanceTimeZone: string;
}

export interface ChoiceConfigInput {
  readonly terminationDeferralMaxSeconds?: number;
  /** Window texts, as MAINTENANCE_WINDOWS takes them. */
  readonly maintenanceWindows?: readonly string[];
  readonly maintenanceTimeZone?: string;
}
