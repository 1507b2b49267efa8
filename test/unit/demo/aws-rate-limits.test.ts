import { describe, expect, it } from 'vitest';
import { awsLikeRateLimits, createRateLimiter, throttledAnswer } from '../../../demo/aws-rate-limits.js';
import { queryErrorOf } from '../../../lambda/adapters/aws/aws-query.js';

describe('the local endpoint rate limits', () => {
  it('lets a full bucket burst, then refills at its rate (EC2: 100, then 20 a second, per action)', () => {
    const limiter = createRateLimiter(awsLikeRateLimits);
    const admitted = (action: string, n: number, atMs: number) =>
      Array.from({ length: n }, () => limiter.admit('ec2', action, atMs)).filter(Boolean).length;
    expect(admitted('DescribeInstances', 150, 0)).toBe(100);
    expect(admitted('DescribeInstances', 50, 1_000)).toBe(20);
    // Another action has a bucket of its own.
    expect(admitted('DescribeLaunchTemplates', 10, 1_000)).toBe(10);
  });

  it('shares one Auto Scaling bucket between every action (40, then 10 a second)', () => {
    const limiter = createRateLimiter(awsLikeRateLimits);
    const calls = ['DescribeAutoScalingGroups', 'CompleteLifecycleAction', 'RecordLifecycleActionHeartbeat'];
    const admitted = Array.from({ length: 60 }, (_, i) => limiter.admit('autoscaling', calls[i % 3]!, 0)).filter(
      Boolean,
    ).length;
    expect(admitted).toBe(40);
    expect(
      Array.from({ length: 20 }, () => limiter.admit('autoscaling', 'CompleteLifecycleAction', 500)).filter(Boolean)
        .length,
    ).toBe(5);
  });

  it('answers as the services do: EC2 503 RequestLimitExceeded, Auto Scaling 400 Throttling', () => {
    const ec2 = throttledAnswer('ec2', 'r-1');
    const asg = throttledAnswer('autoscaling', 'r-2');
    expect([ec2.status, queryErrorOf(ec2.body).code]).toEqual([503, 'RequestLimitExceeded']);
    expect([asg.status, queryErrorOf(asg.body)]).toEqual([400, { code: 'Throttling', message: 'Rate exceeded' }]);
  });
});
