// A drain's marks on a node: the owner label, the exclusion label and the cordon where asked, our
// drain record and the claim that goes with it. Written on a node as read, the mark is conditional
// on the fields the drain decided on (the claim, the record, the exclusion label, the cordon), not
// on the whole node: JSON patch `test` operations, checked by the API server against the node as
// stored, in the same atomic update as the write. The node's status (the kubelet's heartbeats, a
// sibling's drain writing its conditions) and other writers' labels no longer make it a conflict,
// which a resourceVersion precondition did: in a wave of 200 that was 1.2 conflicts a node, each
// a read and a write again (docs/benchmarks.md, issue 40).
// https://datatracker.ietf.org/doc/html/rfc6902#section-4.6
import type { NodeMarks } from '../../cluster/ports/node-gateway.js';
import type { NodeInfo, PatchResult } from '../../cluster/model.js';
import {
  drainAnnotation,
  excludeFromLoadBalancersLabel,
  handOffAnnotation,
  ownerLabel,
  refreshCordonedLabel,
} from '../../cluster/marks/mark-keys.js';
import { formatDrainRecord } from '../../cluster/marks/drain-record.js';
import { KubeApiError } from './kube-api-error.js';
import { classify, statusOf } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';
import { pointer } from './outdated-node-api.js';

const mergePatch = 'application/merge-patch+json';
const jsonPatch = 'application/json-patch+json';

/**
 * The API server's answer when a JSON patch does not apply (a `test` failed, a path is gone): 422
 * with this message and no field causes, unlike a validation or admission refusal.
 * https://github.com/kubernetes/kubernetes/blob/v1.34.4/staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go#L412-L415
 */
const patchDidNotApply = 'the server rejected our request due to an error in our request';

/**
 * Marks the node: conditional on the node as read when given (on its whole resourceVersion when the read did not keep
 * the fields as stored), otherwise one plain merge patch.
 */
export async function markNode(
  kube: KubeHttp,
  name: string,
  marks: NodeMarks,
  asRead?: NodeInfo,
): Promise<PatchResult> {
  const path = `/api/v1/nodes/${encodeURIComponent(name)}`;
  const request =
    asRead?.markBasis !== undefined
      ? { payload: asGoWrites(guardedOps(marks, asRead)), contentType: jsonPatch }
      : { body: mergeBody(marks, asRead?.resourceVersion), contentType: mergePatch };
  try {
    await kube.request('PATCH', path, request);
    return 'patched';
  } catch (error) {
    if (statusOf(error) === 404) return 'node-gone';
    if (statusOf(error) === 409 || didNotApply(error)) return 'changed';
    throw classify(error, `patch node ${name}`);
  }
}

/**
 * JSON as the API server writes the node its patch is applied to (Go's encoder, HTML-safe): a `test` compares a
 * string's bytes, so a record naming a volume with `&` in its handle must be sent as `\u0026` to match.
 * https://github.com/kubernetes/kubernetes/blob/v1.34.4/staging/src/k8s.io/apimachinery/pkg/runtime/serializer/json/json.go#L257
 * https://pkg.go.dev/encoding/json#Marshal ("<", ">", "&", U+2028 and U+2029 are escaped)
 */
export function asGoWrites(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function didNotApply(error: unknown): boolean {
  return (
    error instanceof KubeApiError &&
    error.statusCode === 422 &&
    error.status?.message === patchDidNotApply &&
    (error.status.details?.causes ?? []).length === 0
  );
}

function mergeBody(marks: NodeMarks, resourceVersion: string | undefined): object {
  return {
    metadata: {
      ...(resourceVersion !== undefined ? { resourceVersion } : {}),
      labels: labelsOf(marks),
      annotations: annotationsOf(marks),
    },
    ...(marks.cordon ? { spec: { unschedulable: true } } : {}),
  };
}

const labelsOf = (marks: NodeMarks): Record<string, string> => ({
  [ownerLabel]: marks.owner,
  ...(marks.excludeFromLoadBalancers ? { [excludeFromLoadBalancersLabel]: 'true' } : {}),
});

const annotationsOf = (marks: NodeMarks): Record<string, string> => ({
  [drainAnnotation]: formatDrainRecord(marks.drain),
  ...(marks.claim !== undefined ? { [handOffAnnotation]: marks.claim } : {}),
});

/**
 * Each field the decision read is tested as it was read (null: absent, as the API server's JSON patch reads a `test`
 * of null on a missing key), then the marks are set. A map the node did not have is tested absent and created whole.
 * https://github.com/evanphx/json-patch/blob/v4.12.0/patch.go#L690-L694
 */
export function guardedOps(marks: NodeMarks, asRead: NodeInfo): object[] {
  const test = (path: string, value: unknown) => ({ op: 'test', path, value: value ?? null });
  const add = (path: string, value: unknown) => ({ op: 'add', path, value });
  const ops: object[] = [];
  const annotations = annotationsOf(marks);
  if (asRead.hasAnnotations === false)
    ops.push(test('/metadata/annotations', null), add('/metadata/annotations', annotations));
  else {
    ops.push(
      test(`/metadata/annotations/${pointer(handOffAnnotation)}`, asRead.handOffClaim),
      test(`/metadata/annotations/${pointer(drainAnnotation)}`, asRead.markBasis?.drainText),
      ...Object.entries(annotations).map(([k, v]) => add(`/metadata/annotations/${pointer(k)}`, v)),
    );
  }
  const labels = labelsOf(marks);
  if (Object.keys(asRead.labels).length === 0)
    ops.push(test('/metadata/labels', null), add('/metadata/labels', labels));
  else {
    ops.push(
      test(`/metadata/labels/${pointer(excludeFromLoadBalancersLabel)}`, asRead.labels[excludeFromLoadBalancersLabel]),
      // Whether a cordon is a refresh's, which a drain adopts (our-marks.ts adoptsRefreshCordon).
      test(`/metadata/labels/${pointer(refreshCordonedLabel)}`, asRead.labels[refreshCordonedLabel]),
      ...Object.entries(labels).map(([k, v]) => add(`/metadata/labels/${pointer(k)}`, v)),
    );
  }
  ops.push(test('/spec/unschedulable', asRead.markBasis?.unschedulable));
  if (marks.cordon) ops.push(add('/spec/unschedulable', true));
  return ops;
}
