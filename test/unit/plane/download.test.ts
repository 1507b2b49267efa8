// test/cluster/plane/download.sh against a local HTTP server standing in for dl.k8s.io and
// the etcd and kwok GitHub releases: small shell scripts that print the pinned versions play
// the binaries, beside their published digests. No internet, no Go.
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

const planeDir = join(dirname(fileURLToPath(import.meta.url)), '../../cluster/plane');
const versions = Object.fromEntries(
  [...readFileSync(join(planeDir, 'versions.env'), 'utf8').matchAll(/^(\w+)=(\S+)$/gm)].map((m) => [m[1]!, m[2]!]),
);
const k8s = versions['KUBERNETES_VERSION']!;
const etcd = versions['ETCD_VERSION']!;
const kwok = versions['KWOK_VERSION']!;
const arch = process.arch === 'arm64' ? 'arm64' : 'amd64';
const kubeBinaries = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl'];
const allBinaries = [...kubeBinaries, 'etcd', 'kwok'];

const script = (version: string) => Buffer.from(`#!/bin/sh\necho '${version}'\n`);
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** What the release hosts serve, by path; a test may change an entry. */
function releaseFiles(work: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const name of kubeBinaries) {
    const binary = script(name === 'kubectl' ? `Client Version: ${k8s}` : `Kubernetes ${k8s}`);
    files.set(`/k8s/${k8s}/bin/linux/${arch}/${name}`, binary);
    files.set(`/k8s/${k8s}/bin/linux/${arch}/${name}.sha256`, Buffer.from(sha256(binary)));
  }
  const folder = `etcd-${etcd}-linux-${arch}`;
  mkdirSync(join(work, folder), { recursive: true });
  writeFileSync(join(work, folder, 'etcd'), script(`etcd Version: ${etcd.slice(1)}`), { mode: 0o755 });
  execFileSync('tar', ['-czf', join(work, `${folder}.tar.gz`), '-C', work, folder]);
  const tarball = readFileSync(join(work, `${folder}.tar.gz`));
  files.set(`/etcd/${etcd}/${folder}.tar.gz`, tarball);
  files.set(
    `/etcd/${etcd}/SHA256SUMS`,
    Buffer.from(`${'0'.repeat(64)}  etcd-${etcd}-darwin-arm64.zip\n${sha256(tarball)}  ${folder}.tar.gz\n`),
  );
  const kwokBinary = script(`kwok version ${kwok} (go1.26.0)`);
  files.set(`/kwok/${kwok}/kwok-linux-${arch}`, kwokBinary);
  const assets = [{ name: `kwok-linux-${arch}`, digest: `sha256:${sha256(kwokBinary)}` }];
  files.set(`/kwok-api/releases/tags/${kwok}`, Buffer.from(JSON.stringify({ tag_name: kwok, assets })));
  return files;
}

let server: Server;
let base: string;
let files: Map<string, Buffer>;
const requests: string[] = [];
let work: string;
let cache: string;
const binDir = () => join(cache, `k8s-${k8s}-etcd-${etcd}-kwok-${kwok}`, 'bin');

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const body = files.get(req.url ?? '');
    res.writeHead(body ? 200 : 404).end(body ?? 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'plane-download-'));
  cache = join(work, 'cache');
  files = releaseFiles(work);
  requests.length = 0;
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

interface Run {
  readonly code: number;
  /** The binaries download.sh leaves to the module-proxy build. */
  readonly toBuild: string[];
  readonly log: string;
}

/** Runs a plane script asynchronously (the server answers from this process). */
function run(scriptName: string, env: Record<string, string>, releaseBase: string): Promise<Run> {
  const urls = {
    PLANE_K8S_RELEASE_URL: `${releaseBase}/k8s`,
    PLANE_ETCD_RELEASE_URL: `${releaseBase}/etcd`,
    PLANE_KWOK_RELEASE_URL: `${releaseBase}/kwok`,
    PLANE_KWOK_API_URL: `${releaseBase}/kwok-api`,
  };
  const path = `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`;
  const childEnv = {
    ...process.env,
    PATH: path,
    PLANE_CACHE: cache,
    PLANE_DOWNLOAD: 'auto',
    PLANE_KWOK_SHA256: '',
    ...urls,
    ...env,
  };
  return new Promise((resolve) => {
    execFile('bash', [join(planeDir, scriptName)], { env: childEnv, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, toBuild: stdout.split('\n').filter((l) => l !== ''), log: stderr });
    });
  });
}

const download = (env: Record<string, string> = {}, releaseBase = base) => run('download.sh', env, releaseBase);

/**
 * build.sh with a stand-in `go` first on the PATH that records what it is asked and builds
 * nothing, so the fallback to the module-proxy build shows without one.
 */
async function buildWithGoStub(): Promise<{ run: Run; goCalls: string[] }> {
  const stubDir = join(work, 'go-stub');
  const goLog = join(work, 'go-calls');
  mkdirSync(stubDir);
  writeFileSync(join(stubDir, 'go'), `#!/bin/sh\necho "$*" >>'${goLog}'\n[ "$1" = env ] && echo go1.26.0\nexit 0\n`, {
    mode: 0o755,
  });
  const result = await run(
    'build.sh',
    { PATH: `${stubDir}:${dirname(process.execPath)}:${process.env['PATH'] ?? ''}` },
    base,
  );
  return { run: result, goCalls: existsSync(goLog) ? readFileSync(goLog, 'utf8').trim().split('\n') : [] };
}

const cached = () => (existsSync(binDir()) ? readdirSync(binDir()).sort() : []);
const executable = (name: string) => {
  accessSync(join(binDir(), name), constants.X_OK);
  return true;
};

describe('downloading the plane from the release hosts', () => {
  it('puts every binary, verified and executable, into the cache; nothing is left to build', async () => {
    const run = await download();
    expect(run.code).toBe(0);
    expect(run.toBuild).toEqual([]);
    expect(cached()).toEqual([...allBinaries].sort());
    for (const name of allBinaries) {
      expect(executable(name)).toBe(true);
      expect(run.log).toContain(`${name}: 0 MB in`);
    }
    expect(run.log.match(/sha256 verified/g)).toHaveLength(6);
    expect(readFileSync(join(binDir(), 'kube-apiserver'))).toEqual(
      files.get(`/k8s/${k8s}/bin/linux/${arch}/kube-apiserver`),
    );
    expect(readdirSync(dirname(binDir()))).toEqual(['bin']); // the staging folder is gone
  });

  it('asks nothing of the hosts for binaries already cached at their version', async () => {
    await download();
    requests.length = 0;
    const again = await download();
    expect(again).toMatchObject({ code: 0, toBuild: [] });
    expect(requests).toEqual([]);
  });

  it('refuses a binary whose digest does not match: deleted, not cached, left to the build', async () => {
    files.set(`/k8s/${k8s}/bin/linux/${arch}/kube-scheduler`, script(`Kubernetes ${k8s} # tampered`));
    const run = await download();
    expect(run.code).toBe(0);
    expect(run.toBuild).toEqual(['kube-scheduler']);
    expect(run.log).toMatch(/REFUSED kube-scheduler: checksum mismatch .* deleted, it will be built instead/);
    expect(cached()).toEqual(allBinaries.filter((n) => n !== 'kube-scheduler').sort());
    expect(readdirSync(dirname(binDir()))).toEqual(['bin']);
  });

  it('refuses an etcd tarball that SHA256SUMS does not vouch for', async () => {
    files.set(`/etcd/${etcd}/SHA256SUMS`, Buffer.from(`${'1'.repeat(64)}  etcd-${etcd}-linux-${arch}.tar.gz\n`));
    const run = await download();
    expect(run.toBuild).toEqual(['etcd']);
    expect(run.log).toContain('REFUSED etcd: checksum mismatch');
    expect(cached()).not.toContain('etcd');
  });

  it('downloads no kwok that GitHub records no digest for, and takes PLANE_KWOK_SHA256 instead of the API', async () => {
    files.set(
      `/kwok-api/releases/tags/${kwok}`,
      Buffer.from(JSON.stringify({ assets: [{ name: `kwok-linux-${arch}`, digest: null }] })),
    );
    const run = await download();
    expect(run.toBuild).toEqual(['kwok']);
    expect(run.log).toContain('no published sha256 for kwok');
    expect(requests).not.toContain(`/kwok/${kwok}/kwok-linux-${arch}`);

    const pinned = await download({ PLANE_KWOK_SHA256: sha256(files.get(`/kwok/${kwok}/kwok-linux-${arch}`)!) });
    expect(pinned).toMatchObject({ code: 0, toBuild: [] });
  });

  it('falls back to the build at once when the hosts are unreachable', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));

    const t0 = Date.now();
    const run = await download({}, `http://127.0.0.1:${port}`);
    expect(run).toMatchObject({ code: 0, toBuild: allBinaries });
    expect(run.log).toContain('could not fetch');
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(cached()).toEqual([]);
  });

  it('PLANE_DOWNLOAD=never asks nothing; PLANE_DOWNLOAD=always fails when a binary cannot be verified', async () => {
    const never = await download({ PLANE_DOWNLOAD: 'never' });
    expect(never).toMatchObject({ code: 0, toBuild: allBinaries });
    expect(requests).toEqual([]);

    files.set(`/k8s/${k8s}/bin/linux/${arch}/kubectl.sha256`, Buffer.from('f'.repeat(64)));
    const always = await download({ PLANE_DOWNLOAD: 'always' });
    expect(always.code).not.toBe(0);
    expect(always.log).toContain('PLANE_DOWNLOAD=always, but not downloaded and verified: kubectl');
    expect(cached()).not.toContain('kubectl');
  });

  it('build.sh runs no Go when every binary downloads, and prints the bin folder last', async () => {
    const { run: build, goCalls } = await buildWithGoStub();
    expect(build.code).toBe(0);
    expect(build.toBuild.at(-1)).toBe(binDir());
    expect(goCalls).toEqual([]);
  });

  it('build.sh builds only the refused binary from the module proxy', async () => {
    files.set(`/k8s/${k8s}/bin/linux/${arch}/kube-scheduler.sha256`, Buffer.from('0'.repeat(64)));
    const { run: build, goCalls } = await buildWithGoStub();
    expect(build.log).toContain('REFUSED kube-scheduler');
    expect(build.log).toContain('building from the Go module proxy: kube-scheduler');
    expect(goCalls.filter((c) => c.startsWith('build '))).toEqual([
      expect.stringMatching(/ -o \S+\/kube-scheduler k8s\.io\/kubernetes\/cmd\/kube-scheduler$/),
    ]);
  });
});
