// A drain's mark on the node as read, against the real API server (issue 40): conditional on the
// fields the mark decided on (JSON patch `test` operations, drain-mark-api.ts), not on the whole
// node. A status write since the read (the kubelet, a sibling's conditions) is no conflict; a claim,
// a record or a cordon written since is, and then nothing of the mark is written. A `test` of null
// passes on an absent field; a record's text tests equal however the API server escapes it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DrainRecord } from '../../lambda/cluster/model.js';
import { kubeconfigGateway } from '../../scripts/cluster-access.js';
import { lifecycleAction } from '../fixtures/drain-sources.js';
import { createKwokNode, newInstanceId, waitNodeReady } from './kube.js';
import { a } from './head.js';

const owner = 'gnt-guard';
const names = ['guard-status', 'guard-claim', 'guard-amp', 'guard-cordon'];
const record: DrainRecord = {
  source: lifecycleAction('token-guard', `${owner}-terminate`),
  notifiedAtMs: Date.now(),
  startedAtMs: Date.now(),
  updatedAtMs: Date.now(),
  set: ['exclude-from-load-balancers', 'cordon'],
};
const marks = { excludeFromLoadBalancers: true, cordon: true, drain: record, owner, claim: 'token-guard/0/r1' };
const read = (name: string) => a.core.readNode({ name });
const condition = (name: string, message: string) =>
  a.kubectl(
    'patch',
    'node',
    name,
    '--subresource=status',
    '--type=strategic',
    '-p',
    JSON.stringify({
      status: { conditions: [{ type: 'MaintenancePlanned', status: 'True', reason: 'Test', message }] },
    }),
  );

describe('a mark conditional on what it decided on', () => {
  const gateway = kubeconfigGateway(a.kc);
  beforeAll(async () => {
    for (const name of names) await createKwokNode(a, name, newInstanceId());
    for (const name of names) await waitNodeReady(a, name);
  });
  afterAll(() => {
    for (const name of names) a.kubectl('delete', 'node', name, '--wait=false');
  });

  it('is written over a status change since the read, which a resourceVersion precondition refused', async () => {
    const asRead = (await gateway.getNode('guard-status'))!;
    condition('guard-status', 'first');
    expect((await read('guard-status')).metadata?.resourceVersion).not.toBe(asRead.resourceVersion);

    expect(await gateway.mark('guard-status', marks, asRead)).toBe('patched');
    const node = await read('guard-status');
    expect(node.spec?.unschedulable).toBe(true);
    expect(node.metadata?.labels?.['node.kubernetes.io/exclude-from-external-load-balancers']).toBe('true');
    expect(node.metadata?.annotations?.['graceful-node-termination/hand-off']).toBe('token-guard/0/r1');
    // The old whole-node condition, for comparison: the same status change is a conflict.
    const again = (await gateway.getNode('guard-status'))!;
    condition('guard-status', 'second');
    expect(await gateway.mark('guard-status', marks, { ...again, markBasis: undefined })).toBe('changed');
  });

  it('is refused when another invocation claimed the node since the read, and writes nothing', async () => {
    const asRead = (await gateway.getNode('guard-claim'))!;
    a.kubectl('annotate', 'node', 'guard-claim', 'graceful-node-termination/hand-off=token-guard/0/other');

    expect(await gateway.mark('guard-claim', marks, asRead)).toBe('changed');
    const node = await read('guard-claim');
    expect(node.metadata?.annotations?.['graceful-node-termination/hand-off']).toBe('token-guard/0/other');
    expect(node.metadata?.annotations?.['graceful-node-termination/drain']).toBeUndefined();
    expect(node.spec?.unschedulable).toBeUndefined();
  });

  it('matches a record as the API server stores it: a volume handle with & and <> in it tests equal', async () => {
    const volumes = ['kubernetes.io/csi/s3.csi.aws.com^bucket&prefix<a>'];
    expect(await gateway.mark('guard-amp', { ...marks, drain: { ...record, volumes } })).toBe('patched');
    const asRead = (await gateway.getNode('guard-amp'))!;
    expect(asRead.markBasis?.drainText).toContain('bucket&prefix<a>');
    // The API server leaves out unschedulable: false and empty maps (omitempty): absent, as read.
    expect(asRead.markBasis?.unschedulable).toBe(true);

    const carried = { ...record, volumes, updatedAtMs: record.updatedAtMs + 1_000 };
    expect(await gateway.mark('guard-amp', { ...marks, drain: carried }, asRead)).toBe('patched');
    expect((await gateway.getNode('guard-amp'))!.drain?.updatedAtMs).toBe(carried.updatedAtMs);
  });

  it("is refused when somebody cordoned the node since the read: the cordon is theirs, not the record's", async () => {
    const asRead = (await gateway.getNode('guard-cordon'))!;
    a.kubectl('cordon', 'guard-cordon');

    expect(await gateway.mark('guard-cordon', marks, asRead)).toBe('changed');
    expect((await read('guard-cordon')).metadata?.annotations?.['graceful-node-termination/drain']).toBeUndefined();
  });
});
