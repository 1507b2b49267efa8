// The Events of the termination policy (termination-policy/).
import { type NodeRef, onNode } from './event-shapes.js';

export const chosenForTermination = (node: NodeRef, cause: string, rank: number, of: number, why: string) =>
  onNode(
    node,
    'Normal',
    'ChosenForTermination',
    `Chosen for ${cause} (the cheapest departure: rank ${rank} of ${of}): ${why}.`,
  );

export const passedOverForTermination = (node: NodeRef, cause: string, why: string) =>
  onNode(node, 'Normal', 'PassedOverForTermination', `Not chosen for ${cause}: ${why}.`);

export const terminationDeferred = (node: NodeRef, cause: string, why: string, leftSeconds: number) =>
  onNode(
    node,
    'Warning',
    'TerminationDeferred',
    `${cause} deferred: ${why}. Past the maximum deferral (${leftSeconds} s from now) Auto Scaling's own choice ` +
      `stands.`,
  );

export const terminationDeferralExpired = (node: NodeRef, cause: string, seconds: number) =>
  onNode(
    node,
    'Warning',
    'TerminationDeferralExpired',
    `${cause} deferred for ${seconds} s, the maximum (TERMINATION_DEFERRAL_MAX_SECONDS): Auto Scaling's own ` +
      `choice stands.`,
  );

export const terminationChoiceObserved = (node: NodeRef, cause: string, what: string) =>
  onNode(
    node,
    'Normal',
    'TerminationChoiceObserved',
    `Observe mode: for ${cause} the termination policy ${what}; Auto Scaling's own suggestion was answered.`,
  );
