// The termination policy's answers (docs/termination-policy.md): never an instance Auto Scaling
// did not suggest, never more than it asked for in a zone and market. Its fail-open answer, Auto
// Scaling's own suggestion returned whole, is the one exception: Auto Scaling picks among more
// instances than it needs, keeping its zones balanced (the Lambda termination policy's response
// data), so its suggestion stands as if no policy had answered.
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/lambda-custom-termination-policy.html
import type { Observations, Violation } from '../observations.js';

export function policyAnswersWithinAsk(o: Observations): Violation[] {
  return o.policyCalls.flatMap((call) => {
    if (call.answer === undefined) return [];
    const out: Violation[] = [];
    const suggested = new Map(call.suggested.map((s) => [s.instanceId, s]));
    const outside = call.answer.filter((id) => !suggested.has(id));
    if (outside.length > 0)
      out.push({
        invariant: 'policyAnswersWithinAsk',
        atMs: call.atMs,
        message:
          `the termination policy answered ${outside.join(', ')}, outside Auto Scaling's suggestion ` +
          `for ${call.group}`,
      });
    const whole =
      call.answer.length === call.suggested.length && call.suggested.every((s) => call.answer!.includes(s.instanceId));
    if (whole) return out;
    for (const ask of call.capacity) {
      const taken = call.answer.filter(
        (id) => suggested.get(id)?.zone === ask.zone && suggested.get(id)?.market === ask.market,
      );
      if (taken.length > ask.capacity)
        out.push({
          invariant: 'policyAnswersWithinAsk',
          atMs: call.atMs,
          message:
            `the termination policy answered ${taken.length} instances in ${ask.zone} (${ask.market}) of ` +
            `${call.group}, where ${ask.capacity} were asked`,
        });
    }
    return out;
  });
}
