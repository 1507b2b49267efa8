// The cluster's TargetGroupBindings and Services of type LoadBalancer, for the settle phase's
// load-balancer wait (cluster/rules/served-load-balancers.ts decides what they mean). Two lists, kept
// a minute per container: a wave's drains ask once. Without the TargetGroupBinding CRD (no AWS
// Load Balancer Controller) the first list answers 404: no bindings.
import type { V1Service } from '@kubernetes/client-node';
import { servedBy, type BindingView, type ServiceView } from '../../cluster/rules/served-load-balancers.js';
import { type LoadBalancerSources } from '../../cluster/ports/load-balancer-sources.js';
import type { LabelSelector } from '../../shared/label-selector.js';
import { type ServedLoadBalancers } from '../../shared/served-load-balancers.js';
import { classify, statusOf } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';
import type { WireList } from './object-codecs.js';

interface WireBinding {
  readonly spec?: {
    readonly targetGroupARN?: string;
    readonly targetType?: string;
    readonly serviceRef?: { readonly name?: string; readonly port?: number | string };
    readonly nodeSelector?: LabelSelector;
  };
  readonly metadata?: { readonly namespace?: string };
}

export const bindingsPath = '/apis/elbv2.k8s.aws/v1beta1/targetgroupbindings';

function toBinding(b: WireBinding): BindingView {
  const ref = b.spec?.serviceRef;
  return {
    targetGroupArn: b.spec?.targetGroupARN,
    targetType: b.spec?.targetType,
    service:
      ref?.name !== undefined
        ? { namespace: b.metadata?.namespace ?? 'default', name: ref.name, port: ref.port }
        : undefined,
    ...(b.spec?.nodeSelector !== undefined ? { nodeSelector: b.spec.nodeSelector } : {}),
  };
}

function toService(s: V1Service): ServiceView {
  return {
    namespace: s.metadata?.namespace ?? '',
    name: s.metadata?.name ?? '',
    uid: s.metadata?.uid ?? '',
    type: s.spec?.type,
    loadBalancerClass: s.spec?.loadBalancerClass,
    annotations: s.metadata?.annotations ?? {},
    nodePorts: (s.spec?.ports ?? []).map((p) => ({ port: p.port, name: p.name, nodePort: p.nodePort })),
  };
}

export function createLoadBalancerSources(
  kube: KubeHttp,
  o: { readonly cacheMs?: number; readonly now?: () => number } = {},
): LoadBalancerSources {
  const cacheMs = o.cacheMs ?? 60_000;
  const now = o.now ?? Date.now;
  let cached: { atMs: number; answer: Promise<ServedLoadBalancers> } | undefined;
  const read = async (): Promise<ServedLoadBalancers> => {
    const [bindings, services] = await Promise.all([listBindings(kube), listServices(kube)]);
    return servedBy(bindings, services);
  };
  return {
    servedLoadBalancers() {
      if (cached === undefined || now() - cached.atMs > cacheMs) {
        const answer = read();
        cached = { atMs: now(), answer };
        answer.catch(() => (cached = undefined));
      }
      return cached.answer;
    },
  };
}

async function listBindings(kube: KubeHttp): Promise<BindingView[]> {
  try {
    const list = await kube.request<WireList<WireBinding>>('GET', bindingsPath, { compressed: true });
    return list.items.map(toBinding);
  } catch (error) {
    if (statusOf(error) === 404) return []; // the CRD is not installed
    throw classify(error, 'list targetgroupbindings');
  }
}

async function listServices(kube: KubeHttp): Promise<ServiceView[]> {
  try {
    const list = await kube.request<WireList<V1Service>>('GET', '/api/v1/services', { compressed: true });
    return list.items.map(toService);
  } catch (error) {
    throw classify(error, 'list services');
  }
}
