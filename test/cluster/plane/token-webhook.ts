// A token-authentication webhook for the local kube-apiserver that does what EKS's
// aws-iam-authenticator does with our tokens, minus the call to STS: it decodes
// "k8s-aws-v1.<base64url presigned URL>", checks the URL's shape and age, and verifies the
// SigV4 signature itself (it knows the test credentials) with x-k8s-aws-id set to ITS
// cluster name, so a token minted for another cluster, or without that signed header, fails.
// https://github.com/kubernetes-sigs/aws-iam-authenticator/blob/master/pkg/token/token.go
import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The Kubernetes group the drainer's IAM role maps to (access entry kubernetesGroups). */
export const drainerGroup = 'graceful-node-termination';
export const testAws = {
  region: 'eu-west-1',
  clusterName: 'local-plane',
  accountId: '123456789012',
  accessKeyId: 'AKIAPLANETEST0000001',
  secretAccessKey: 'plane/test/secret/key/not/a/real/one000',
} as const;
export const drainerUsername = `arn:aws:sts::${testAws.accountId}:assumed-role/graceful-node-termination/handler`;

const allowedQuery = new Set([
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

export interface TokenWebhook {
  readonly url: string;
  readonly reviews: { readonly authenticated: boolean; readonly reason: string }[];
  close(): Promise<void>;
}

export async function verifyEksToken(token: string, now = new Date()): Promise<string | undefined> {
  if (!token.startsWith('k8s-aws-v1.')) return 'no k8s-aws-v1. prefix';
  const payload = token.slice('k8s-aws-v1.'.length);
  if (!/^[A-Za-z0-9_-]+$/.test(payload)) return 'payload is not unpadded base64url';
  let url: URL;
  try {
    url = new URL(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return 'payload is not a URL';
  }
  const host = `sts.${testAws.region}.amazonaws.com`;
  if (url.protocol !== 'https:' || url.hostname !== host || url.pathname !== '/')
    return `unexpected STS URL ${url.origin}${url.pathname}`;
  const q = url.searchParams;
  for (const key of q.keys()) if (!allowedQuery.has(key)) return `query parameter ${key} is not allowed`;
  if (q.get('Action') !== 'GetCallerIdentity' || q.get('Version') !== '2011-06-15')
    return 'not a GetCallerIdentity request';
  const signedHeaders = q.get('X-Amz-SignedHeaders')?.split(';') ?? [];
  if (!signedHeaders.includes('x-k8s-aws-id')) return 'x-k8s-aws-id is not a signed header';
  const date = q.get('X-Amz-Date') ?? '';
  const signedAt = Date.parse(date.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
  if (Number.isNaN(signedAt)) return 'bad X-Amz-Date';
  // Like the real authenticator: valid 15 minutes after signing, whatever X-Amz-Expires says.
  if (now.getTime() - signedAt > 15 * 60_000 || signedAt - now.getTime() > 5 * 60_000) return 'token expired';
  if (!q.get('X-Amz-Credential')?.startsWith(`${testAws.accessKeyId}/`)) return 'unknown access key';
  const signer = new SignatureV4({
    credentials: {
      accessKeyId: testAws.accessKeyId,
      secretAccessKey: testAws.secretAccessKey,
      sessionToken: q.get('X-Amz-Security-Token') ?? undefined,
    },
    region: testAws.region,
    service: 'sts',
    sha256: Sha256,
  });
  const expected = await signer.presign(
    new HttpRequest({
      method: 'GET',
      protocol: 'https:',
      hostname: host,
      path: '/',
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      headers: { host, 'x-k8s-aws-id': testAws.clusterName },
    }),
    { expiresIn: Number(q.get('X-Amz-Expires') ?? 60), signingDate: new Date(signedAt) },
  );
  if (expected.query?.['X-Amz-Signature'] !== q.get('X-Amz-Signature'))
    return `signature does not match for cluster ${testAws.clusterName}`;
  return undefined;
}

export async function startTokenWebhook(): Promise<TokenWebhook> {
  const reviews: { authenticated: boolean; reason: string }[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', async () => {
      let review: { apiVersion?: string; spec?: { token?: string } } = {};
      try {
        review = JSON.parse(raw);
      } catch {
        /* answered as unauthenticated below */
      }
      const problem = await verifyEksToken(review.spec?.token ?? '');
      reviews.push({ authenticated: !problem, reason: problem ?? 'ok' });
      const status = problem
        ? { authenticated: false, error: problem }
        : {
            authenticated: true,
            user: {
              username: drainerUsername,
              uid: `aws-iam-authenticator:${testAws.accountId}:AROATEST`,
              groups: [drainerGroup],
            },
          };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ apiVersion: review.apiVersion ?? 'authentication.k8s.io/v1', kind: 'TokenReview', status }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/authenticate`,
    reviews,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
