import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { functionWindows, windowNote } from '../../../scripts/maintenance-windows-note.js';

describe("what upgrade says about the termination policy's windows", () => {
  it('says when the next window opens, in UTC and the zone', () => {
    // Friday 2026-11-27 10:00 UTC; Saturday 22:00 in Paris is 21:00 UTC.
    expect(windowNote('0 22 * * SAT for 2h', 'Europe/Paris', Date.parse('2026-11-27T10:00:00Z'))).toContain(
      'the next opens 2026-11-28T21:00Z (28 Nov 2026, 22:00 Europe/Paris)',
    );
    expect(windowNote('0 9 * * FRI for 2h', 'UTC', Date.parse('2026-11-27T10:00:00Z'))).toBe(
      'a maintenance window is open now (0 9 * * FRI for 2h, UTC)',
    );
    expect(windowNote(undefined)).toContain('no maintenance windows');
  });

  it("reads the function's variables with one signed GetFunctionConfiguration", async () => {
    const seen: { url?: string; auth?: string } = {};
    const server = createServer((req, res) => {
      seen.url = req.url;
      seen.auth = String(req.headers.authorization);
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          Environment: {
            Variables: { MAINTENANCE_WINDOWS: '0 22 * * SAT for 2h', MAINTENANCE_TIME_ZONE: 'Europe/Paris' },
          },
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const arn = 'arn:aws:lambda:eu-west-1:123456789012:function:gnt';
      const read = await functionWindows(arn, {
        region: 'eu-west-1',
        credentials: async () => ({ accessKeyId: 'AKID', secretAccessKey: 'secret' }),
        endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      });
      expect(read).toEqual({ windows: '0 22 * * SAT for 2h', zone: 'Europe/Paris' });
      expect(seen.url).toBe(`/2015-03-31/functions/${encodeURIComponent(arn)}/configuration`);
      expect(seen.auth).toMatch(/^AWS4-HMAC-SHA256 Credential=AKID\/\d{8}\/eu-west-1\/lambda\/aws4_request/);
    } finally {
      server.close();
    }
  });
});

describe('the upgrade plan', () => {
  it("shows the group's termination policy and its windows", async () => {
    const { renderPlan } = await import('../../../scripts/upgrade-plan.js');
    const lines = renderPlan({
      group: 'workers',
      region: 'eu-west-1',
      strategy: 'default',
      launchTemplateVersion: '7',
      instances: [],
      minHealthyPercentage: 100,
      maxHealthyPercentage: 110,
      autoRollback: false,
      deployment: undefined,
      deploymentFrom: 'none',
      alarms: [],
      preflight: { nodes: 0, blockers: 0, findings: [] },
      terminationPolicy: `arn:aws:lambda:eu-west-1:123456789012:function:gnt: ${windowNote('0 22 * * SAT for 2h', 'UTC', Date.parse('2026-11-27T10:00:00Z'))}`,
    });
    expect(lines.at(-1)).toBe(
      "  termination policy:      arn:aws:lambda:eu-west-1:123456789012:function:gnt: outside the maintenance windows (0 22 * * SAT for 2h, UTC): the next opens 2026-11-28T22:00Z (28 Nov 2026, 22:00 UTC); until then each termination waits up to the policy's maximum deferral",
    );
  });
});
