// Another tenant of the API server, for the wave and rotation sections: a ServiceAccount whose
// own FlowSchema puts it in global-default (as a user matched by no other schema lands), GETting
// one node ten times a second from a process of its own (bench/probe-client.ts): the bench
// process plays hundreds of Lambda containers, and a probe on its event loop would time the
// loop, not the API server. The API server's own timing of the same requests comes from the
// audit log (serverLatenciesMs).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Environment } from '../demo/environment.js';
import { readAudit, until } from '../test/cluster/kube.js';
import { round } from './fleet.js';

export const probeUser = 'system:serviceaccount:bench-probe:probe';

export interface Probe {
  readonly user: string;
  readonly target: string;
  latenciesMs(fromMs: number, toMs: number): number[];
  count(): { answered: number; failed: number };
  priorityLevel(): Promise<string>;
  stop(): void;
}

export async function startProbe(env: Environment, node: string): Promise<Probe> {
  const a = env.admin;
  const file = join(env.plane.dir, 'probe.yaml');
  writeFileSync(file, probeManifests());
  a.kubectl('apply', '-f', file);
  const token = (
    await a.core.createNamespacedServiceAccountToken({
      namespace: 'bench-probe',
      name: 'probe',
      body: { spec: { audiences: [], expirationSeconds: 7200 } },
    })
  ).status!.token;
  const caFile = join(env.plane.dir, 'probe-ca.pem');
  writeFileSync(caFile, env.plane.caPem);
  const target = `/api/v1/nodes/${node}`;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, 'probe-client.ts'), env.plane.server, target],
    {
      env: { ...process.env, PROBE_TOKEN: token, PROBE_CA_FILE: caFile },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const samples: { atMs: number; ms: number }[] = [];
  let failed = 0;
  let levelUid = '';
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const s = JSON.parse(line) as { atMs: number; ms: number; ok: boolean; level: string };
    if (s.level) levelUid = s.level;
    if (s.ok) samples.push(s);
    else failed++;
  });
  await until('the probe answered', 30_000, async () => samples.length > 0);
  return {
    user: probeUser,
    target: `GET ${target}`,
    latenciesMs: (fromMs, toMs) => samples.filter((s) => s.atMs >= fromMs && s.atMs < toMs).map((s) => s.ms),
    count: () => ({ answered: samples.length, failed }),
    async priorityLevel() {
      const levels = JSON.parse(a.kubectl('get', 'prioritylevelconfigurations', '-o', 'json')) as {
        items: { metadata: { name: string; uid: string } }[];
      };
      return levels.items.find((l) => l.metadata.uid === levelUid)?.metadata.name ?? `unknown (${levelUid})`;
    },
    stop: () => void child.kill('SIGTERM'),
  };
}

/** The probe's p99 over the span before (beforeFromMs to fromMs) and during (fromMs to toMs), its own and the API server's. */
export async function probeSummary(env: Environment, probe: Probe, beforeFromMs: number, fromMs: number, toMs: number) {
  const before = percentile(probe.latenciesMs(beforeFromMs, fromMs), 0.99);
  const during = percentile(probe.latenciesMs(fromMs, toMs), 0.99);
  return {
    probe: {
      user: probe.user,
      priorityLevel: await probe.priorityLevel(),
      target: probe.target,
      p99BeforeMs: round(before),
      p99DuringMs: round(during),
      samples: probe.count(),
    },
    probeP99Ratio: round(during / before),
    /** The probe's requests as the API server timed them (the audit log's received → complete, ms resolution). */
    probeServerP99Ms: {
      before: round(percentile(serverLatenciesMs(env, beforeFromMs, fromMs), 0.99)),
      during: round(percentile(serverLatenciesMs(env, fromMs, toMs), 0.99)),
    },
  };
}

/** The same probe's requests as the API server timed them (audit: received to response complete). */
export function serverLatenciesMs(env: Environment, fromMs: number, toMs: number): number[] {
  return readAudit(
    env.plane,
    (e) => e.user === probeUser && e.receivedMs >= fromMs && e.receivedMs < toMs && e.verb === 'get',
  ).map((e) => e.atMs - e.receivedMs);
}

function probeManifests(): string {
  return `apiVersion: v1
kind: Namespace
metadata: { name: bench-probe }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: probe, namespace: bench-probe }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: bench-probe }
rules: [{ apiGroups: [""], resources: ["nodes"], verbs: ["get"] }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: bench-probe }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bench-probe }
subjects: [{ kind: ServiceAccount, name: probe, namespace: bench-probe }]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: { name: bench-probe }
spec:
  matchingPrecedence: 800
  priorityLevelConfiguration: { name: global-default }
  distinguisherMethod: { type: ByUser }
  rules:
    - subjects: [{ kind: ServiceAccount, serviceAccount: { name: probe, namespace: bench-probe } }]
      resourceRules: [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"] }]
`;
}

/** The value at quantile p (0..1) of the values, NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}
