// Where one more pod of a Deployment may go (cluster/rules/placement.ts): the room the anti-affinity
// refusal counts honours the template's nodeSelector and tolerations, as the scheduler would.
import { describe, expect, it } from 'vitest';
import { toDeploymentInfo } from '../../../../lambda/adapters/kubernetes/deployment-api.js';
import { admits, nodeSelectorQuery, toleratesTaint } from '../../../../lambda/cluster/rules/placement.js';
import { type Placement } from '../../../../lambda/cluster/model.js';

const node = (labels: Record<string, string>, taints: { key: string; value?: string; effect: string }[] = []) => ({
  name: 'n',
  labels,
  taints,
});

describe('placement', () => {
  it('needs every nodeSelector label', () => {
    const p: Placement = { nodeSelector: { group: 'web', zone: 'a' }, tolerations: [] };
    expect(admits(p, node({ group: 'web', zone: 'a', other: 'x' }))).toBe(true);
    expect(admits(p, node({ group: 'web' }))).toBe(false);
    expect(admits(p, node({ group: 'gpu', zone: 'a' }))).toBe(false);
    expect(nodeSelectorQuery(p)).toBe('group=web,zone=a');
    expect(nodeSelectorQuery({ nodeSelector: {}, tolerations: [] })).toBe('');
  });

  it('is repelled by an untolerated NoSchedule or NoExecute taint, never by PreferNoSchedule', () => {
    const none: Placement = { nodeSelector: {}, tolerations: [] };
    expect(admits(none, node({}, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]))).toBe(false);
    expect(admits(none, node({}, [{ key: 'dedicated', value: 'gpu', effect: 'NoExecute' }]))).toBe(false);
    expect(admits(none, node({}, [{ key: 'graceful-node-termination/outdated', effect: 'PreferNoSchedule' }]))).toBe(
      true,
    );
    const gpu: Placement = {
      nodeSelector: {},
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }],
    };
    expect(admits(gpu, node({}, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]))).toBe(true);
    expect(admits(gpu, node({}, [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }]))).toBe(false);
    expect(admits(gpu, node({}, [{ key: 'dedicated', value: 'gpu', effect: 'NoExecute' }]))).toBe(false);
  });

  it('matches tolerations as the scheduler does', () => {
    const taint = { key: 'k', value: 'v', effect: 'NoSchedule' };
    expect(toleratesTaint({ operator: 'Exists' }, taint)).toBe(true);
    expect(toleratesTaint({ key: 'k', operator: 'Exists' }, taint)).toBe(true);
    expect(toleratesTaint({ key: 'k', operator: 'Exists', effect: 'NoExecute' }, taint)).toBe(false);
    expect(toleratesTaint({ key: 'k', value: 'v' }, taint)).toBe(true);
    expect(toleratesTaint({ key: 'k', value: 'w' }, taint)).toBe(false);
    expect(toleratesTaint({ key: 'k' }, { key: 'k', effect: 'NoSchedule' })).toBe(true);
    // Gt/Lt (alpha): taken as tolerating, so room is never refused on a guess.
    expect(toleratesTaint({ key: 'k', operator: 'Gt', value: '5' }, taint)).toBe(true);
    expect(toleratesTaint({ key: 'other', operator: 'Lt', value: '5' }, taint)).toBe(false);
  });

  it('is read from the pod template', () => {
    const d = toDeploymentInfo({
      spec: {
        selector: {},
        template: {
          spec: {
            containers: [],
            nodeSelector: { group: 'web' },
            tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'web', effect: 'NoSchedule' }],
          },
        },
      },
    });
    expect(d.placement).toEqual({
      nodeSelector: { group: 'web' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'web', effect: 'NoSchedule' }],
    });
  });
});
