// The out-of-service taint after an undrained release (termination/instance-terminated.ts):
// appended with a JSON patch (a merge patch would replace the list, the taint manager's
// timeAdded included), beside our annotation naming the terminated instance, conditional on
// the node as read; taken back by index, only while our annotation says it is ours.
import type { V1Pod } from '@kubernetes/client-node';
import type { NodeInfo } from '../../cluster/model.js';
import type { OutOfServiceGateway } from '../../cluster/ports/out-of-service-gateway.js';
import { outOfServiceAnnotation, outOfServiceTaintKey, ownerLabel } from '../../cluster/marks/mark-keys.js';
import { isDaemonSetPod, isFinished, isMirrorPod } from '../../cluster/rules/pods.js';
import { classify } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';
import { toPodInfo, type WireList } from './object-codecs.js';
import { nodePatcher, pointer } from './outdated-node-api.js';

export function createOutOfServiceApi(kube: KubeHttp): OutOfServiceGateway {
  const { get, patch } = nodePatcher(kube);
  return {
    async podsLeftOn(nodeName) {
      let list: WireList<V1Pod>;
      try {
        list = await kube.request<WireList<V1Pod>>('GET', '/api/v1/pods', {
          query: { fieldSelector: `spec.nodeName=${nodeName}` },
          compressed: true,
        });
      } catch (error) {
        throw classify(error, `list pods on ${nodeName}`);
      }
      return list.items
        .map(toPodInfo)
        .flatMap((p) => (isFinished(p) || isMirrorPod(p) || isDaemonSetPod(p) ? [] : [`${p.namespace}/${p.name}`]));
    },
    taintOutOfService(node, instanceId, owner) {
      const taint = { key: outOfServiceTaintKey, value: 'nodeshutdown', effect: 'NoExecute' };
      const ops = [
        { op: 'replace', path: '/metadata/resourceVersion', value: node.resourceVersion },
        node.taints.length > 0
          ? { op: 'add', path: '/spec/taints/-', value: taint }
          : { op: 'add', path: '/spec/taints', value: [taint] },
        node.hasAnnotations === false
          ? { op: 'add', path: '/metadata/annotations', value: { [outOfServiceAnnotation]: instanceId } }
          : { op: 'add', path: `/metadata/annotations/${pointer(outOfServiceAnnotation)}`, value: instanceId },
        { op: 'add', path: `/metadata/labels/${pointer(ownerLabel)}`, value: owner },
      ];
      return patch(node, ops, `taint node ${node.name} out of service`);
    },
    async untaintOutOfService(first) {
      // The node moves on under us (the lifecycle controller's own taints come and go): read it again and retry.
      let node: NodeInfo | undefined = first;
      for (let attempt = 0; node !== undefined && node.outOfService !== undefined && attempt < 5; attempt++) {
        const result = await patch(node, untaintOps(node), `take the out-of-service taint off node ${node.name}`);
        if (result !== 'changed') return result;
        node = await get(node.name);
      }
      return node === undefined ? 'node-gone' : 'changed';
    },
  };
}

/**
 * Our taints by index (tested in place: indexes are positional), from the last so earlier ones stay valid, and our
 * annotation.
 */
function untaintOps(node: NodeInfo): object[] {
  const ours = node.taints.flatMap((t, i) => (t.key === outOfServiceTaintKey ? [i] : [])).reverse();
  return [
    { op: 'replace', path: '/metadata/resourceVersion', value: node.resourceVersion },
    ...ours.flatMap((i) => [
      { op: 'test', path: `/spec/taints/${i}/key`, value: outOfServiceTaintKey },
      { op: 'remove', path: `/spec/taints/${i}` },
    ]),
    { op: 'remove', path: `/metadata/annotations/${pointer(outOfServiceAnnotation)}` },
  ];
}
