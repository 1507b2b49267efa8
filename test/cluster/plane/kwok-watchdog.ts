// Seen once in CI: a replacement pod bound to a kwok node stayed Pending for minutes, which
// held a PodDisruptionBudget and the drain behind it. kwok plays each pod's next stage from a
// delay queue, and a play that fails (an API timeout or 429 on a busy 2-core machine) is
// retried with a backoff that grows to 32 minutes while the pod gets no further event
// (sigs.k8s.io/kwok v0.8.0: pkg/kwok/controllers/pod_controller.go playStageWorker,
// utils.go defaultBackoff); that is the likely cause, unconfirmed because kwok's log went with
// the plane's folder. A real kubelet keeps syncing its pods, so the plane stands in for
// that: a pod bound to a node that stays Pending well past its start delay gets an annotation
// touched, which is a fresh event, and kwok plays its stage again at once. Every touch is logged
// with kwok's own lines about the pod, so the cause stays visible.
import { readFileSync } from 'node:fs';
import { adminRequest, type AdminTarget } from './admin-request.js';

export interface WatchdogOptions {
  readonly target: AdminTarget;
  readonly kwokLog: string;
  readonly log: (line: string) => void;
  /** How long past its start delay a bound pod may stay Pending. */
  readonly graceMs?: number;
  readonly intervalMs?: number;
}

interface PodItem {
  metadata: {
    name: string;
    namespace: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    annotations?: Record<string, string>;
  };
  spec: { nodeName?: string };
  status?: { conditions?: { type: string; status: string; lastTransitionTime?: string }[] };
}

export const nudgeAnnotation = 'plane.test/kwok-nudge';
const readyDelayAnnotation = 'pod-ready.stage.kwok.x-k8s.io/delay';

export function startKwokWatchdog(options: WatchdogOptions): () => void {
  const graceMs = options.graceMs ?? 15_000;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const call = (method: string, path: string, body?: unknown) => adminRequest(options.target, method, path, body);

  // Only nodes kwok plays (kwok.x-k8s.io/node=fake); a node nobody plays keeps its pods Pending on purpose.
  const kwokNodes = new Map<string, boolean>();
  const playedByKwok = async (node: string) => {
    if (!kwokNodes.has(node)) {
      const got = await call('GET', `/api/v1/nodes/${node}`);
      if (got.status !== 200) return false;
      const annotations =
        (JSON.parse(got.body) as { metadata: { annotations?: Record<string, string> } }).metadata.annotations ?? {};
      kwokNodes.set(node, annotations['kwok.x-k8s.io/node'] === 'fake');
    }
    return kwokNodes.get(node)!;
  };

  const sweep = async () => {
    const listed = await call('GET', '/api/v1/pods?fieldSelector=status.phase%3DPending');
    if (listed.status !== 200) return;
    const now = Date.now();
    for (const pod of (JSON.parse(listed.body) as { items: PodItem[] }).items) {
      const { metadata, spec, status } = pod;
      if (!spec.nodeName || metadata.deletionTimestamp || !(await playedByKwok(spec.nodeName))) continue;
      const scheduled =
        status?.conditions?.find((c) => c.type === 'PodScheduled')?.lastTransitionTime ?? metadata.creationTimestamp;
      const lastNudge = Number(metadata.annotations?.[nudgeAnnotation] ?? 0);
      const since = Math.max(Date.parse(scheduled ?? ''), lastNudge);
      const delayMs = goDurationMs(metadata.annotations?.[readyDelayAnnotation]);
      if (!Number.isFinite(since) || now - since < delayMs + graceMs) continue;
      const key = `${metadata.namespace}/${metadata.name}`;
      const kwokLines = readKwokLines(options.kwokLog, metadata.name);
      options.log(
        `kwok left ${key} Pending on ${spec.nodeName} for ${Math.round((now - since) / 1000)} s; touching it so kwok plays its stage again. kwok's lines about it:\n${kwokLines}`,
      );
      await call('PATCH', `/api/v1/namespaces/${metadata.namespace}/pods/${metadata.name}`, {
        metadata: { annotations: { [nudgeAnnotation]: String(now) } },
      });
    }
  };

  const loop = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      sweep()
        .catch(() => undefined) // the plane may be stopping; the next sweep tries again
        .finally(loop);
    }, options.intervalMs ?? 5_000);
    timer.unref();
  };
  loop();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}

function readKwokLines(path: string, podName: string): string {
  try {
    const lines = readFileSync(path, 'utf8')
      .split('\n')
      .filter((l) => l.includes(podName));
    return lines.length > 0 ? lines.slice(-10).join('\n') : '(none)';
  } catch {
    return '(kwok log unreadable)';
  }
}

/** A Go duration as kwok reads it ("2s", "1m30s", "500ms"); unset or unreadable: 0. */
export function goDurationMs(text: string | undefined): number {
  if (!text) return 0;
  const units: Record<string, number> = {
    h: 3_600_000,
    m: 60_000,
    s: 1_000,
    ms: 1,
    us: 0.001,
    µs: 0.001,
    ns: 0.000001,
  };
  let total = 0;
  let rest = text.trim();
  while (rest.length > 0) {
    const m = /^(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/.exec(rest);
    if (!m) return 0;
    total += Number(m[1]) * units[m[2]!]!;
    rest = rest.slice(m[0].length);
  }
  return total;
}
