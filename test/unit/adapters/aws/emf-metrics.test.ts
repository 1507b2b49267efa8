import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEmfMetrics } from '../../../../lambda/adapters/aws/emf-metrics.js';
import { createRouter } from '../../../../lambda/router.js';
import { parseConfig } from '../../../../lambda/shared/config.js';
import type { MetricsSink } from '../../../../lambda/shared/aws-ports.js';
import {
  FakeAutoScaling,
  FakeEc2,
  FakeClock,
  FakeCluster,
  FakeLifecycleActions,
  MemoryLog,
  pdbBlocks,
  pod,
} from '../../../fakes/fake-world.js';
import { instanceId, lifecycleMessage, snsEvent } from '../../../fixtures/notifications.js';

describe('metrics', () => {
  afterEach(() => vi.restoreAllMocks());

  it('writes one EMF document per data point set, with its dimensions', async () => {
    const lines: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((line: unknown) => void lines.push(String(line)));
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: unknown) => (lines.push(String(chunk)), true));

    const sink = createEmfMetrics('gnt', new MemoryLog());
    sink.emit(
      { Transition: 'terminating', Outcome: 'drained' },
      { PodsEvicted: { unit: 'Count', value: 3 }, SecondsSinceNotification: { unit: 'Seconds', value: 42.5 } },
    );
    await sink.ready();

    const doc = JSON.parse(lines.find((l) => l.includes('"_aws"'))!) as Record<string, unknown> & {
      _aws: {
        CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
      };
    };
    expect(doc._aws.CloudWatchMetrics[0]!.Namespace).toBe('GracefulNodeTermination');
    expect(doc._aws.CloudWatchMetrics[0]!.Dimensions[0]).toEqual(expect.arrayContaining(['Transition', 'Outcome']));
    expect(doc._aws.CloudWatchMetrics[0]!.Metrics).toEqual(
      expect.arrayContaining([
        { Name: 'PodsEvicted', Unit: 'Count' },
        { Name: 'SecondsSinceNotification', Unit: 'Seconds' },
      ]),
    );
    expect(doc).toMatchObject({
      Transition: 'terminating',
      Outcome: 'drained',
      PodsEvicted: 3,
      SecondsSinceNotification: 42.5,
    });
  });

  it('reports a drain: outcome, seconds since the notification, pods evicted, evictions blocked', async () => {
    const clock = new FakeClock();
    const cluster = new FakeCluster(clock);
    cluster.addNode('node-a', instanceId);
    const web = cluster.addPod(pod({ name: 'web' }));
    let open = false;
    cluster.evictionRules.push((p) => (p.uid === web.uid && !open ? pdbBlocks('web-pdb', () => true)(p) : 'accept'));
    clock.after(30_000, () => (open = true));
    const emitted: Parameters<MetricsSink['emit']>[] = [];
    const handle = createRouter({
      config: parseConfig({
        CLUSTER_NAME: 'prod',
        AUTO_SCALING_GROUP_NAMES: 'workers',
        LIFECYCLE_HOOK_NAMES: 'workers-terminate',
      }),
      log: new MemoryLog(),
      clock,
      lifecycle: new FakeLifecycleActions(clock),
      instances: new FakeAutoScaling(),
      ec2: new FakeEc2(),
      handOffs: undefined,
      cluster: async () => cluster,
      metrics: { emit: (d, v) => void emitted.push([d, v]) },
    });

    await handle(snsEvent(lifecycleMessage()), { getRemainingTimeInMillis: () => 900_000 });

    expect(emitted).toHaveLength(1);
    const [dimensions, values] = emitted[0]!;
    expect(dimensions).toEqual({ Transition: 'terminating', Outcome: 'drained' });
    expect(values['PodsEvicted']).toEqual({ unit: 'Count', value: 1 });
    expect(values['EvictionsBlocked']!.value).toBeGreaterThan(1);
    expect(values['SecondsSinceNotification']!.value).toBeGreaterThanOrEqual(90); // 30 s budget wait + 60 s LB wait
  });
});
