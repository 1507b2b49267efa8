// Starts a real control plane on loopback: etcd, kube-apiserver (RBAC, audit log, a token
// webhook that checks EKS-style tokens), kube-controller-manager, kube-scheduler and kwok.
// Everything is torn down by PID. Used by the cluster suite, the demo and the benchmark.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminRequest } from './admin-request.js';
import { startKwokWatchdog } from './kwok-watchdog.js';
import { drainerGroup, startTokenWebhook, type TokenWebhook } from './token-webhook.js';

const here = dirname(fileURLToPath(import.meta.url));

export interface PlaneInfo {
  readonly dir: string;
  readonly server: string;
  readonly caPem: string;
  readonly adminKubeconfig: string;
  /** A kubeconfig for the drainer's group with a static token (KUBECONFIG_PATH mode). */
  readonly drainerKubeconfig: string;
  readonly auditLog: string;
  readonly binDir: string;
  readonly kubectl: string;
}

export interface Plane extends PlaneInfo {
  stop(): Promise<void>;
}

export interface PlaneOptions {
  /** Print progress lines (the demo and the benchmark do). */
  readonly log?: (line: string) => void;
  /** Extra audit rules placed before the drainer's (the benchmark audits kubectl too). */
  readonly auditUsers?: readonly string[];
  /** Audit the scheduler's bindings too (which node each pod went to): the wave bench traces a pod evicted twice. */
  readonly auditBindings?: boolean;
  /** Keep the folder after stop, for inspection. */
  readonly keepDir?: boolean;
  /**
   * For thousands of stand-in nodes without a kubelet (the fleet benchmark): the node
   * lifecycle controller waits an hour before marking a silent node NotReady (instead of
   * tainting all of them during the measurement), and kube-controller-manager may make 200
   * requests a second instead of 20, so taking the not-ready taint off 2,000 new nodes takes
   * seconds, not minutes, and a real node's taint is not queued behind them.
   */
  readonly manyNodesWithoutKubelet?: boolean;
}

export const adminToken = 'plane-admin-token';
/** The drainer's identity when it runs in kubeconfig mode: a static token in the drainer group. */
export const kubeconfigDrainerUser = 'graceful-node-termination-kubeconfig';
const kubeconfigDrainerToken = 'graceful-node-termination-kubeconfig-token';

/**
 * Runs build.sh (which skips work when the cached binaries are current, downloads the release
 * binaries where it can and builds the rest) and returns the bin folder.
 */
export function buildPlane(log: (line: string) => void = () => {}): string {
  log(
    'checking the control plane binaries (a first run downloads them in minutes, or builds them from the Go module proxy in about 12)',
  );
  try {
    const out = execFileSync('bash', [join(here, 'build.sh')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    return out.trim().split('\n').at(-1)!;
  } catch (error) {
    throw new Error(
      `Could not build the local control plane (test/cluster/plane/build.sh failed; its output is above). ` +
        `It needs the release hosts (dl.k8s.io, github.com), or Go >= 1.26 and the Go module proxy. Cause: ${(error as Error).message}`,
    );
  }
}

/**
 * The ports are chosen free, then let go before etcd and kube-apiserver bind them: a server this process (or another)
 * starts meanwhile can take one (a CI soak's etcd met a Node HTTP server on its port: "bind: address already in use").
 * Then the plane starts again on fresh ports, up to three times; any other failure is the plane's, told at once.
 */
export async function startPlane(options: PlaneOptions = {}): Promise<Plane> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startPlaneOnce(options);
    } catch (error) {
      if (attempt >= 3 || !(error as Error).message.includes('address already in use')) throw error;
      options.log?.(
        `a port was taken before the plane bound it; starting again on fresh ports (attempt ${attempt + 1})`,
      );
    }
  }
}

async function startPlaneOnce(options: PlaneOptions): Promise<Plane> {
  const log = options.log ?? (() => {});
  const binDir = buildPlane(log);
  const bin = (name: string) => join(binDir, name);
  const dir = mkdtempSync(join(tmpdir(), 'plane-'));
  const processes: { name: string; child: ChildProcess }[] = [];
  let webhook: TokenWebhook | undefined;
  const t0 = Date.now();

  let stopWatchdog = () => {};
  const stop = async () => {
    stopWatchdog();
    for (const { child } of [...processes].reverse()) await terminate(child);
    await webhook?.close();
    if (!options.keepDir) rmSync(dir, { recursive: true, force: true });
  };
  const onExit = () => {
    for (const { child } of processes) child.kill('SIGKILL');
  };
  process.once('exit', onExit);

  const start = (name: string, args: string[]) => {
    const out = openSync(join(dir, `${name}.log`), 'a');
    const child = spawn(bin(name), args, { stdio: ['ignore', out, out] });
    processes.push({ name, child });
    child.once('exit', (code, signal) => {
      if (!stopping) log(`${name} exited (${code ?? signal}); see ${join(dir, `${name}.log`)}`);
    });
    return child;
  };
  let stopping = false;

  try {
    const [etcdPort, etcdPeerPort, apiPort, cmPort, schedPort] = await freePorts(5);
    const server = `https://127.0.0.1:${apiPort}`;

    log('starting etcd');
    start('etcd', [
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeerPort}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ]);

    webhook = await startTokenWebhook();
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs1', format: 'pem' }));
    writeFileSync(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    writeFileSync(
      join(dir, 'tokens.csv'),
      `${adminToken},plane-admin,plane-admin-uid,"system:masters"\n` +
        `${kubeconfigDrainerToken},${kubeconfigDrainerUser},${kubeconfigDrainerUser}-uid,"${drainerGroup}"\n`,
    );
    writeFileSync(
      join(dir, 'webhook.kubeconfig'),
      kubeconfigYaml({ server: webhook.url, caFile: undefined, token: undefined, name: 'token-webhook' }),
    );
    // Only our identities are audited, at Request level, so the log shows exactly what a
    // drainer did, in order, with the patch bodies.
    const auditUsers = options.auditUsers ?? [];
    writeFileSync(
      join(dir, 'audit-policy.yaml'),
      [
        'apiVersion: audit.k8s.io/v1',
        'kind: Policy',
        'omitStages: ["RequestReceived"]',
        'rules:',
        `  - level: Request`,
        `    userGroups: ["${drainerGroup}"]`,
        ...(auditUsers.length
          ? ['  - level: Request', `    users: [${auditUsers.map((u) => `"${u}"`).join(', ')}]`]
          : []),
        ...(options.auditBindings
          ? [
              '  - level: Request',
              '    verbs: ["create"]',
              '    resources: [{ group: "", resources: ["pods/binding"] }]',
            ]
          : []),
        '  - level: None',
        '',
      ].join('\n'),
    );
    const auditLog = join(dir, 'audit.log');

    log('starting kube-apiserver');
    start('kube-apiserver', [
      `--etcd-servers=http://127.0.0.1:${etcdPort}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      `--cert-dir=${join(dir, 'certs')}`,
      '--authorization-mode=Node,RBAC',
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      `--authentication-token-webhook-config-file=${join(dir, 'webhook.kubeconfig')}`,
      '--authentication-token-webhook-version=v1',
      '--authentication-token-webhook-cache-ttl=10s',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      '--service-cluster-ip-range=10.96.0.0/16',
      '--allow-privileged=true',
      `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
      `--audit-log-path=${auditLog}`,
      '--audit-log-format=json',
      '--audit-log-maxsize=0',
      // API Priority and Fairness on, as in every real cluster: the drainer's FlowSchema
      // (installed with its RBAC) is proven to classify its requests.
    ]);
    const caFile = join(dir, 'certs', 'apiserver.crt');
    await waitFor('kube-apiserver /readyz', 90_000, async () => {
      try {
        readFileSync(caFile);
      } catch {
        return false;
      }
      return (await adminGet(server, caFile, '/readyz')).status === 200;
    });
    const caPem = readFileSync(caFile, 'utf8');
    const adminKubeconfig = join(dir, 'admin.kubeconfig');
    writeFileSync(adminKubeconfig, kubeconfigYaml({ server, caFile, token: adminToken, name: 'plane' }));
    // Relative paths and a token file, as a kubeconfig on a real machine often has them.
    const drainerKubeconfig = join(dir, 'drainer.kubeconfig');
    writeFileSync(join(dir, 'drainer.token'), `${kubeconfigDrainerToken}\n`);
    writeFileSync(
      drainerKubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: drainer',
        'clusters:',
        `- { name: plane, cluster: { server: "${server}", certificate-authority: certs/apiserver.crt } }`,
        'users:',
        '- { name: drainer, user: { tokenFile: drainer.token } }',
        'contexts:',
        '- { name: drainer, context: { cluster: plane, user: drainer } }',
        '',
      ].join('\n'),
    );

    log('starting kube-controller-manager, kube-scheduler and kwok');
    start('kube-controller-manager', [
      `--kubeconfig=${adminKubeconfig}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      `--secure-port=${cmPort}`,
      `--service-account-private-key-file=${join(dir, 'sa.key')}`,
      `--root-ca-file=${caFile}`,
      '--use-service-account-credentials=false',
      // Replacement pods and PDB status must follow quickly.
      '--concurrent-replicaset-syncs=10',
      ...(options.manyNodesWithoutKubelet
        ? ['--node-monitor-grace-period=1h', '--kube-api-qps=200', '--kube-api-burst=400']
        : []),
    ]);
    start('kube-scheduler', [
      `--kubeconfig=${adminKubeconfig}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      `--secure-port=${schedPort}`,
    ]);
    start('kwok', [
      `--kubeconfig=${adminKubeconfig}`,
      `--config=${join(here, 'kwok-stages.yaml')}`,
      '--manage-all-nodes=false',
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      '--node-lease-duration-seconds=40',
      '--cidr=10.244.0.0/16',
    ]);
    await waitFor(
      'the default ServiceAccount',
      60_000,
      async () => (await adminGet(server, caFile, '/api/v1/namespaces/default/serviceaccounts/default')).status === 200,
    );
    stopWatchdog = startKwokWatchdog({
      target: { server, ca: caPem, token: adminToken },
      kwokLog: join(dir, 'kwok.log'),
      log,
    });
    const kubectl = bin('kubectl');
    log(`control plane ready in ${((Date.now() - t0) / 1000).toFixed(1)} s (${dir})`);
    return {
      dir,
      server,
      caPem,
      adminKubeconfig,
      drainerKubeconfig,
      auditLog,
      binDir,
      kubectl,
      stop: async () => {
        stopping = true;
        process.off('exit', onExit);
        await stop();
      },
    };
  } catch (error) {
    stopping = true;
    const logs = processes.map(({ name }) => tail(join(dir, `${name}.log`))).join('\n');
    await stop().catch(() => {});
    throw new Error(`The local control plane did not start: ${(error as Error).message}\n${logs}`, { cause: error });
  }
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

export async function waitFor(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
  intervalMs = 250,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(
    `timed out after ${timeoutMs / 1000} s waiting for ${what}${lastError ? ` (last error: ${(lastError as Error).message})` : ''}`,
  );
}

/** The CA file appears only once kube-apiserver has written its certificates. */
function adminGet(server: string, caFile: string, path: string): Promise<{ status: number; body: string }> {
  return adminRequest({ server, ca: readFileSync(caFile), token: adminToken }, 'GET', path);
}

function kubeconfigYaml(o: {
  server: string;
  caFile: string | undefined;
  token: string | undefined;
  name: string;
}): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${o.name}`,
    '  cluster:',
    `    server: ${o.server}`,
    ...(o.caFile ? [`    certificate-authority: ${o.caFile}`] : []),
    'users:',
    `- name: ${o.name}`,
    `  user: ${o.token ? `{ token: ${o.token} }` : '{}'}`,
    'contexts:',
    `- name: ${o.name}`,
    `  context: { cluster: ${o.name}, user: ${o.name} }`,
    `current-context: ${o.name}`,
    '',
  ].join('\n');
}

async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<import('node:net').Server>((resolve) => {
          const s = createServer();
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as import('node:net').AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

function tail(path: string, lines = 15): string {
  try {
    return `--- ${path}\n` + readFileSync(path, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}
