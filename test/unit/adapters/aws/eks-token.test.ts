import { describe, expect, it } from 'vitest';
import { EksTokenSource, mintEksToken, stsHostname } from '../../../../lambda/adapters/aws/eks-token.js';

const credentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'session/with+chars=',
};

function decode(token: string): URL {
  expect(token.startsWith('k8s-aws-v1.')).toBe(true);
  const payload = token.slice('k8s-aws-v1.'.length);
  // base64url: no padding, no + or /.
  expect(payload).toMatch(/^[A-Za-z0-9_-]+$/);
  return new URL(Buffer.from(payload, 'base64url').toString('utf8'));
}

describe('mintEksToken', () => {
  it('encodes a presigned STS GetCallerIdentity URL with x-k8s-aws-id signed', async () => {
    const token = await mintEksToken({
      clusterName: 'prod',
      region: 'eu-west-1',
      credentials,
      signingDate: new Date('2026-11-22T10:00:00Z'),
    });
    const url = decode(token);

    expect(url.protocol).toBe('https:');
    expect(url.hostname).toBe('sts.eu-west-1.amazonaws.com');
    expect(url.pathname).toBe('/');
    expect(url.searchParams.get('Action')).toBe('GetCallerIdentity');
    expect(url.searchParams.get('Version')).toBe('2011-06-15');
    expect(url.searchParams.get('X-Amz-SignedHeaders')?.split(';')).toEqual(['host', 'x-k8s-aws-id']);
    expect(url.searchParams.get('X-Amz-Credential')).toBe('AKIDEXAMPLE/20261122/eu-west-1/sts/aws4_request');
    expect(url.searchParams.get('X-Amz-Date')).toBe('20261122T100000Z');
    expect(url.searchParams.get('X-Amz-Security-Token')).toBe(credentials.sessionToken);
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('puts only Action, Version and the X-Amz-* signing parameters in the query', async () => {
    const url = decode(await mintEksToken({ clusterName: 'prod', region: 'us-east-1', credentials }));
    const allowed = new Set([
      'Action',
      'Version',
      'X-Amz-Algorithm',
      'X-Amz-Credential',
      'X-Amz-Date',
      'X-Amz-Expires',
      'X-Amz-SignedHeaders',
      'X-Amz-Security-Token',
      'X-Amz-Signature',
    ]);
    for (const key of url.searchParams.keys()) expect(allowed.has(key), key).toBe(true);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('60');
  });

  it('signs for the cluster: another cluster name gives another signature', async () => {
    const signingDate = new Date('2026-11-22T10:00:00Z');
    const a = decode(await mintEksToken({ clusterName: 'prod', region: 'eu-west-1', credentials, signingDate }));
    const b = decode(await mintEksToken({ clusterName: 'staging', region: 'eu-west-1', credentials, signingDate }));
    expect(a.searchParams.get('X-Amz-Signature')).not.toBe(b.searchParams.get('X-Amz-Signature'));
  });

  it.each([
    ['us-east-1', 'sts.us-east-1.amazonaws.com'],
    ['eu-west-1', 'sts.eu-west-1.amazonaws.com'],
    ['cn-north-1', 'sts.cn-north-1.amazonaws.com.cn'],
    ['us-gov-west-1', 'sts.us-gov-west-1.amazonaws.com'],
    ['us-iso-east-1', 'sts.us-iso-east-1.c2s.ic.gov'],
    ['us-isob-east-1', 'sts.us-isob-east-1.sc2s.sgov.gov'],
    ['eusc-de-east-1', 'sts.eusc-de-east-1.amazonaws.eu'],
  ])("uses the partition's STS host for %s", (region, host) => {
    expect(stsHostname(region)).toBe(host);
  });

  it('uses the China partition host for cn- regions', () => {
    expect(stsHostname('cn-north-1')).toBe('sts.cn-north-1.amazonaws.com.cn');
  });
});

describe('EksTokenSource', () => {
  it('reuses a token for 10 minutes and mints a new one before the 15 minutes run out', async () => {
    let now = Date.parse('2026-11-22T10:00:00Z');
    const source = new EksTokenSource({ clusterName: 'prod', region: 'eu-west-1', credentials }, () => now);
    const first = await source.token();
    now += 9 * 60_000;
    expect(await source.token()).toBe(first);
    now += 60_000;
    const second = await source.token();
    expect(second).not.toBe(first);
    expect(decode(second).searchParams.get('X-Amz-Date')).toBe('20261122T101000Z');
  });
});
