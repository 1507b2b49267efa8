// One raw HTTPS request to the plane's API server as its admin: what the harness needs
// before (and beside) any Kubernetes client, for readiness checks and the kwok watchdog.
import { request } from 'node:https';

export interface AdminTarget {
  readonly server: string;
  readonly ca: string | Buffer;
  readonly token: string;
}

/** Bodies are sent as JSON merge patches (the only write the harness makes this way). */
export function adminRequest(
  target: AdminTarget,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: string }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${target.server}${path}`,
      {
        method,
        ca: target.ca,
        timeout: 5_000,
        headers: {
          Authorization: `Bearer ${target.token}`,
          ...(payload
            ? { 'Content-Type': 'application/merge-patch+json', 'Content-Length': Buffer.byteLength(payload) }
            : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(payload);
  });
}
