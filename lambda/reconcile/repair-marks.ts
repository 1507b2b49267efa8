// The reconciler's share of node auto repair: a repair record whose owner is gone is taken back with our cordon,
// and our Unhealthy mark of a replacement that never began is set back to Healthy.
import { type NodeInfo, type RepairRecord } from '../cluster/model.js';
import { repairMarksRemoved } from '../cluster/events/repair-events.js';
import type { InstanceState, InstanceRepairs } from '../shared/aws-ports.js';
import { asError, type Log } from '../shared/log.js';
import { repairOwner } from './owners.js';
import type { RepairGateway } from '../cluster/ports/repair-gateway.js';
import type { EventRecorder } from '../cluster/ports/event-recorder.js';

import type { Clock } from '../shared/clock.js';
import type { Config } from '../shared/config.js';

/** What the reconciler's repair share uses of its ports. */
export interface RepairMarksDeps {
  readonly cluster: Pick<RepairGateway, 'unmarkRepair'> & EventRecorder;
  /** SetInstanceHealth, to take back our Unhealthy mark with its record; absent unless REPAIR is on. */
  readonly repairs?: Pick<InstanceRepairs, 'setHealthy'> | undefined;
  readonly config: Pick<Config, 'drainTimeoutSeconds'>;
  readonly clock: Clock;
  readonly log: Log;
}

/**
 * Our Unhealthy mark of a replacement Auto Scaling never carried out (its process suspended, the grace period):
 * set back to Healthy with the record, so a process resumed later replaces nothing on our word; the next repair
 * pass judges the node again. Best effort: the record is gone either way.
 */
async function takeBackUnhealthy(deps: RepairMarksDeps, record: RepairRecord, state: InstanceState | undefined) {
  if (record.action !== 'replace' || state?.lifecycleState !== 'InService') return;
  if (state.healthStatus?.toUpperCase() !== 'UNHEALTHY') return;
  if (deps.repairs === undefined) {
    deps.log.warn('our Unhealthy mark stays on the instance: node auto repair is off, so it is not set back', {
      instanceId: record.instanceId,
    });
    return;
  }
  try {
    await deps.repairs.setHealthy(record.instanceId);
    deps.log.info('set the instance Healthy again: the replacement we asked for never began', {
      instanceId: record.instanceId,
    });
  } catch (error) {
    deps.log.warn('could not set the instance Healthy again', { instanceId: record.instanceId, error: asError(error) });
  }
}

/** A repair record whose replacement or reboot is over or never happened: taken back, with our cordon. */
export async function reconcileRepair(
  deps: RepairMarksDeps,
  node: NodeInfo,
  record: RepairRecord,
  state: InstanceState | undefined,
  report: { repairMarksRemoved: string[] },
) {
  const owner = repairOwner(record, state, deps.clock.now(), deps.config.drainTimeoutSeconds * 1000);
  if (owner.kind === 'alive' || (await deps.cluster.unmarkRepair(node, record)) !== 'patched') return;
  deps.log.info('took back the record of a repair whose owner is gone', { node: node.name, why: owner.why });
  await takeBackUnhealthy(deps, record, state);
  await deps.cluster.record(repairMarksRemoved(node, owner.why, record.cordoned && node.drain === undefined));
  report.repairMarksRemoved.push(node.name);
}
