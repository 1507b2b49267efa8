// The drain phase's write of our drain record (NodeGateway.saveDrainRecord): the annotation alone, by merge patch.
import type { DrainRecord, PatchResult } from '../../cluster/model.js';
import type { NodeGateway } from '../../cluster/ports/node-gateway.js';
import { formatDrainRecord } from '../../cluster/marks/drain-record.js';
import { drainAnnotation } from '../../cluster/marks/mark-keys.js';
import { classify, statusOf } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';

export function createDrainRecordApi(kube: KubeHttp): Pick<NodeGateway, 'saveDrainRecord'> {
  return { saveDrainRecord: (nodeName, record) => saveDrainRecord(kube, nodeName, record) };
}

async function saveDrainRecord(kube: KubeHttp, nodeName: string, record: DrainRecord): Promise<PatchResult> {
  const body = { metadata: { annotations: { [drainAnnotation]: formatDrainRecord(record) } } };
  try {
    await kube.request('PATCH', `/api/v1/nodes/${encodeURIComponent(nodeName)}`, {
      body,
      contentType: 'application/merge-patch+json',
    });
    return 'patched';
  } catch (error) {
    if (statusOf(error) === 404) return 'node-gone';
    throw classify(error, `record the drain's progress on node ${nodeName}`);
  }
}
