// The wave bench's other tenant, in a process of its own: what it measures is the API server's
// answer, not the event loop of the bench (which plays 200 Lambda containers at once). GETs one
// path ten times a second and prints each sample as a JSON line: {"atMs","ms","ok","level"}.
// Usage: tsx bench/probe-client.ts <server-url> <path>; PROBE_TOKEN and PROBE_CA_FILE in the environment.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';

const [server, path] = process.argv.slice(2);
const token = process.env['PROBE_TOKEN'];
const caFile = process.env['PROBE_CA_FILE'];
if (server === undefined || path === undefined || token === undefined || caFile === undefined) {
  throw new Error('usage: tsx bench/probe-client.ts <server-url> <path> (PROBE_TOKEN, PROBE_CA_FILE set)');
}
const url = new URL(server);
const agent = new Agent({ keepAlive: true, ca: readFileSync(caFile) });

function get(): Promise<{ ok: boolean; level: string }> {
  return new Promise((resolve) => {
    const req = request(
      { host: url.hostname, port: url.port, path, agent, headers: { Authorization: `Bearer ${token}` } },
      (res) => {
        const level = String(res.headers['x-kubernetes-pf-prioritylevel-uid'] ?? '');
        res.resume();
        res.on('end', () => resolve({ ok: res.statusCode === 200, level }));
      },
    );
    req.on('error', () => resolve({ ok: false, level: '' }));
    req.end();
  });
}

process.on('SIGTERM', () => process.exit(0));
for (;;) {
  const atMs = Date.now();
  const t = performance.now();
  const { ok, level } = await get();
  process.stdout.write(`${JSON.stringify({ atMs, ms: performance.now() - t, ok, level })}\n`);
  await new Promise((r) => setTimeout(r, 100));
}
