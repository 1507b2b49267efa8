// A local stand-in for Auto Scaling's instance refresh, for the upgrade demo and benchmark:
// when the local endpoint answers StartInstanceRefresh, this plays the refresh as Auto
// Scaling would (a stand-in, not AWS: no health checks, warm-up, checkpoints or alarms):
// the Started event to the handler's EventBridge rule, then batches sized by the preferences
// (launch before terminate when MaxHealthyPercentage > 100, terminate first otherwise), each
// new instance a kwok node of the new version admitted by the real launch handling, each old
// one drained by the real termination handling, and the Succeeded event at the end.
import { randomUUID } from 'node:crypto';
import { waitNodeReady } from '../test/cluster/kube.js';
import type { CallOptions, Environment } from './environment.js';
import type { LocalRefresh } from './local-aws.js';

export interface RefreshPlayOptions {
  readonly say: (line: string) => void;
  /** Handler settings for every call (MARK_OUTDATED_ON_REFRESH=false for the naive run). */
  readonly settings?: Readonly<Record<string, string>>;
}

export function refreshEvent(what: string, refresh: Pick<LocalRefresh, 'id' | 'group'>): Record<string, unknown> {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': `EC2 Auto Scaling Instance Refresh ${what}`,
    source: 'aws.autoscaling',
    account: '123456789012',
    time: new Date().toISOString(),
    region: 'eu-west-1',
    resources: [],
    detail: { InstanceRefreshId: refresh.id, AutoScalingGroupName: refresh.group },
  };
}

/** Plays every refresh the local endpoint starts; resolves each run in `done`. */
export function playInstanceRefreshes(env: Environment, o: RefreshPlayOptions): { done: Map<string, Promise<void>> } {
  const done = new Map<string, Promise<void>>();
  env.aws.onStartInstanceRefresh((refresh) => done.set(refresh.id, play(env, refresh, o)));
  return { done };
}

async function play(env: Environment, refresh: LocalRefresh, o: RefreshPlayOptions): Promise<void> {
  const call: CallOptions = { settings: o.settings ?? {} };
  const group = [...env.aws.instances].filter(
    ([, i]) => i.group === refresh.group && !i.lifecycleState.startsWith('Terminating'),
  );
  const outdated = group.filter(([, i]) => (i.version ?? '1') !== refresh.desiredVersion).map(([id]) => id);
  const capacity = group.length;
  const launchFirst = refresh.maxHealthyPercentage > 100;
  const batch = Math.max(
    1,
    Math.floor(
      (capacity * (launchFirst ? refresh.maxHealthyPercentage - 100 : 100 - refresh.minHealthyPercentage)) / 100,
    ),
  );
  refresh.status = 'InProgress';
  refresh.instancesToUpdate = outdated.length;
  o.say(
    `auto scaling: instance refresh ${refresh.id.slice(0, 8)} InProgress: ${outdated.length} of ${capacity} instance(s) to replace, ${batch} at a time, ${launchFirst ? 'launch before terminate' : 'terminate first'}; alarms ${refresh.alarms.join(', ') || 'none'} (not evaluated by this stand-in)`,
  );
  await env.deliver(refreshEvent('Started', refresh), call);
  let serial = 0;
  const launchOne = async () => {
    const instanceId = `i-0${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    const name = `${refresh.group}-v${refresh.desiredVersion}-${++serial}-${instanceId.slice(-4)}`;
    env.aws.instances.set(instanceId, {
      privateDnsName: name,
      group: refresh.group,
      lifecycleState: 'Pending:Wait',
      version: refresh.desiredVersion,
    });
    // The instance boots while the launch hook waits for its node.
    const joining = env
      .addNode(name, instanceId, { 'node-version': refresh.desiredVersion })
      .then(() => waitNodeReady(env.admin, name));
    const admitted = await env.launch(instanceId, call);
    await joining;
    o.say(
      `auto scaling: launched ${instanceId} (${name}): ${JSON.stringify((admitted as { records?: { status?: string }[] }).records?.[0]?.status)}`,
    );
  };
  const terminateOne = async (instanceId: string) => {
    const run = await env.terminate(instanceId, call);
    o.say(
      `auto scaling: terminated ${instanceId} (${env.aws.instances.get(instanceId)?.privateDnsName}): ${JSON.stringify((run.result as { records?: { status?: string }[] }).records?.[0]?.status)}`,
    );
    env.aws.instances.delete(instanceId);
  };
  for (let i = 0; i < outdated.length; i += batch) {
    const old = outdated.slice(i, i + batch);
    const names = old.map((id) => env.aws.instances.get(id)!.privateDnsName);
    if (launchFirst) {
      await Promise.all(old.map(() => launchOne()));
      for (const id of old) env.aws.instances.get(id)!.lifecycleState = 'Terminating';
      await Promise.all(old.map((id) => terminateOne(id)));
    } else {
      for (const id of old) env.aws.instances.get(id)!.lifecycleState = 'Terminating';
      await Promise.all(old.map((id) => terminateOne(id)));
      await Promise.all(old.map(() => launchOne()));
    }
    // The instance is gone with its node (the cloud controller deletes it).
    for (const name of names) await env.admin.core.deleteNode({ name }).catch(() => undefined);
    refresh.instancesToUpdate = outdated.length - Math.min(outdated.length, i + batch);
    refresh.percentageComplete = Math.round((100 * (outdated.length - refresh.instancesToUpdate)) / outdated.length);
  }
  refresh.status = 'Successful';
  o.say(`auto scaling: instance refresh ${refresh.id.slice(0, 8)} Successful`);
  await env.deliver(refreshEvent('Succeeded', refresh), call);
}
