// The EC2 DescribeInstances call (lambda/adapters/ec2-instances.ts) against a local HTTP
// server answering as EC2's Query API does (shapes from the API reference's examples).
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createEc2Instances,
  describeInstancesQuery,
  ec2Endpoint,
  parseDescribeInstances,
} from '../../../../lambda/adapters/aws/ec2-instances.js';
import { ServiceBusyError, TransientError } from '../../../../lambda/shared/errors.js';

const instance = (
  id: string,
  name: string,
) => `<item><instanceId>${id}</instanceId><imageId>ami-1</imageId><instanceState><code>16</code><name>running</name></instanceState>
  <privateDnsName>${name}</privateDnsName><dnsName/><placement><availabilityZone>eu-west-1a</availabilityZone></placement>
  <networkInterfaceSet><item><privateDnsName>other-${name}</privateDnsName></item></networkInterfaceSet></item>`;
const answer = (reservations: string[][], nextToken?: string) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r-1</requestId><reservationSet>${reservations
    .map((r) => `<item><reservationId>r-x</reservationId><instancesSet>${r.join('')}</instancesSet></item>`)
    .join('')}</reservationSet>${nextToken ? `<nextToken>${nextToken}</nextToken>` : ''}</DescribeInstancesResponse>`;
const error = (code: string, message: string) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${code}</Code><Message>${message}</Message></Error></Errors><RequestID>x</RequestID></Response>`;

describe('EC2 private DNS names', () => {
  let respond: (form: URLSearchParams, req: IncomingMessage, res: ServerResponse) => void;
  const seen: { form: URLSearchParams; headers: IncomingMessage['headers'] }[] = [];
  let server: ReturnType<typeof createServer>;
  let url: string;

  beforeEach(async () => {
    seen.length = 0;
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        seen.push({ form, headers: req.headers });
        respond(form, req, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterEach(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const directory = () =>
    createEc2Instances({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
      endpoint: url,
      sleep: async () => {},
    });

  it("asks with an instance-id filter (unknown ids are left out, not an error), signed for ec2, and reads each instance's own name", async () => {
    respond = (_f, _q, res) =>
      res
        .writeHead(200, { 'content-type': 'text/xml' })
        .end(
          answer([
            [instance('i-01', 'ip-10-0-0-1.eu-west-1.compute.internal')],
            [instance('i-02', 'i-02.eu-west-1.compute.internal')],
          ]),
        );
    const names = await directory().privateDnsNames(['i-01', 'i-02', 'i-gone']);
    expect([...names]).toEqual([
      ['i-01', 'ip-10-0-0-1.eu-west-1.compute.internal'],
      ['i-02', 'i-02.eu-west-1.compute.internal'],
    ]);
    const form = Object.fromEntries(seen[0]!.form);
    expect(form).toEqual({
      Action: 'DescribeInstances',
      Version: '2016-11-15',
      'Filter.1.Name': 'instance-id',
      'Filter.1.Value.1': 'i-01',
      'Filter.1.Value.2': 'i-02',
      'Filter.1.Value.3': 'i-gone',
    });
    expect(seen[0]!.headers['authorization']).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/ec2\/aws4_request/,
    );
  });

  it("follows nextToken, and splits more than 200 ids (a filter's limit) into several calls", async () => {
    respond = (form, _q, res) => {
      const ids = [...form.entries()].filter(([k]) => k.startsWith('Filter.1.Value.')).map(([, v]) => v);
      const first = !form.get('NextToken');
      res
        .writeHead(200)
        .end(
          answer(
            [ids.slice(first ? 0 : 1, first ? 1 : 2).map((id) => instance(id, `n-${id}`))],
            first ? 'page-2' : undefined,
          ),
        );
    };
    const ids = Array.from({ length: 201 }, (_, i) => `i-${i}`);
    const names = await directory().privateDnsNames(ids);
    expect(
      seen.map((s) => [
        [...s.form.keys()].filter((k) => k.startsWith('Filter.1.Value.')).length,
        s.form.get('NextToken'),
      ]),
    ).toEqual([
      [200, null],
      [200, 'page-2'],
      [1, null],
      [1, 'page-2'],
    ]);
    expect(names.get('i-0')).toBe('n-i-0');
    expect(names.get('i-200')).toBe('n-i-200');
  });

  it('retries throttling (RequestLimitExceeded) and 5xx, and fails with the code and message otherwise', async () => {
    let calls = 0;
    respond = (_f, _q, res) => {
      calls++;
      if (calls === 1) return res.writeHead(503).end(error('RequestLimitExceeded', 'Request limit exceeded.'));
      if (calls === 2) return res.writeHead(500).end(error('InternalError', 'An internal error has occurred'));
      res.writeHead(200).end(answer([[instance('i-01', 'n1')]]));
    };
    await expect(directory().privateDnsNames(['i-01'])).resolves.toEqual(new Map([['i-01', 'n1']]));
    expect(calls).toBe(3);

    // Throttled through every attempt: EC2 is there, only busy (anyone can spend the account's rate).
    respond = (_f, _q, res) => res.writeHead(503).end(error('RequestLimitExceeded', 'Request limit exceeded.'));
    await expect(directory().privateDnsNames(['i-01'])).rejects.toBeInstanceOf(ServiceBusyError);

    respond = (_f, _q, res) =>
      res.writeHead(403).end(error('UnauthorizedOperation', 'You are not authorized to perform this operation.'));
    const failure = directory().privateDnsNames(['i-01']);
    await expect(failure).rejects.toBeInstanceOf(TransientError);
    await expect(failure).rejects.toThrow(/HTTP 403 UnauthorizedOperation: You are not authorized/);
    await expect(failure).rejects.not.toBeInstanceOf(ServiceBusyError);
  });

  it('builds the query, the regional endpoint per partition, and parses an empty answer', () => {
    expect(describeInstancesQuery(['i-1'], 'tok')).toMatchObject({ 'Filter.1.Value.1': 'i-1', NextToken: 'tok' });
    expect(ec2Endpoint('eu-west-1').href).toBe('https://ec2.eu-west-1.amazonaws.com/');
    expect(ec2Endpoint('cn-north-1').href).toBe('https://ec2.cn-north-1.amazonaws.com.cn/');
    expect(parseDescribeInstances(answer([])).names.size).toBe(0);
    // A terminated instance keeps its state and Auto Scaling's group tag (the out-of-service trigger reads both).
    const terminated = `<item><instanceId>i-03</instanceId><instanceState><code>48</code><name>terminated</name></instanceState><privateDnsName/>
      <tagSet><item><key>Name</key><value>w</value></item><item><key>aws:autoscaling:groupName</key><value>workers</value></item></tagSet></item>`;
    expect([...parseDescribeInstances(answer([[terminated, instance('i-01', 'n')]])).states]).toEqual([
      ['i-03', { state: 'terminated', group: 'workers' }],
      ['i-01', { state: 'running' }],
    ]);
    expect(() => parseDescribeInstances('<Other/>')).toThrow(/no DescribeInstancesResponse/);
  });

  it("reads how an instance is bought, and for Spot its request's status (a filter again: a forgotten request is absent)", async () => {
    const spot = (id: string) =>
      instance(id, 'n1').replace(
        '<imageId>',
        '<instanceLifecycle>spot</instanceLifecycle><spotInstanceRequestId>sir-1</spotInstanceRequestId><imageId>',
      );
    respond = (form, _q, res) =>
      form.get('Action') === 'DescribeInstances'
        ? res
            .writeHead(200)
            .end(answer([[form.get('Filter.1.Value.1') === 'i-spot' ? spot('i-spot') : instance('i-od', 'n2')]]))
        : res
            .writeHead(200)
            .end(
              `<DescribeSpotInstanceRequestsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><spotInstanceRequestSet><item><spotInstanceRequestId>sir-1</spotInstanceRequestId><state>active</state><status><code>marked-for-termination</code><updateTime>2026-11-23T10:00:00.000Z</updateTime><message>Your Spot Instance is marked for termination.</message></status><instanceId>i-spot</instanceId></item></spotInstanceRequestSet></DescribeSpotInstanceRequestsResponse>`,
            );
    await expect(directory().purchase('i-spot')).resolves.toEqual({ lifecycle: 'spot', spotRequestId: 'sir-1' });
    await expect(directory().spotRequestStatus('sir-1')).resolves.toBe('marked-for-termination');
    expect(Object.fromEntries(seen[1]!.form)).toMatchObject({
      Action: 'DescribeSpotInstanceRequests',
      'Filter.1.Name': 'spot-instance-request-id',
      'Filter.1.Value.1': 'sir-1',
    });
    await expect(directory().spotRequestStatus('sir-forgotten')).resolves.toBeUndefined();
    seen.length = 0;
    await expect(directory().purchase('i-od')).resolves.toEqual({ lifecycle: 'on-demand', spotRequestId: undefined });
    expect(seen).toHaveLength(1);
    respond = (_f, _q, res) => res.writeHead(200).end(answer([]));
    await expect(directory().purchase('i-gone')).resolves.toBeUndefined();
  });
});
