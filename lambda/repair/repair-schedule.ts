// Node auto repair's entry: one line in the reconciler's scheduled pass
// (reconcile/reconcile-schedule.ts), after the marks were reconciled. Off unless REPAIR is set.
import type { TriggerContext } from '../trigger.js';
import { repairPass } from './repair-pass.js';
import type { RepairReport } from './repair-ports.js';

export async function repairOnSchedule(ctx: TriggerContext): Promise<RepairReport | undefined> {
  const settings = ctx.config.repair;
  if (settings === undefined || ctx.repairs === undefined) return undefined;
  const started = ctx.clock.now();
  const report = await repairPass({
    cluster: await ctx.cluster(),
    instances: ctx.instances,
    repairs: ctx.repairs,
    config: ctx.config,
    settings,
    clock: ctx.clock,
    log: ctx.log,
    metrics: ctx.metrics,
  });
  ctx.log.info('repair pass', { ...report, durationMs: ctx.clock.now() - started });
  return report;
}
