// The release template's parameters, their console groups and labels: one parameter for each
// option (options/options.ts, the one definition the app's context reads too) and two for where
// the release's Lambda zip is. release-coverage.ts says, for every prop, which parameter stands
// for it or why none does.
import { allOptions, optionGroups } from './options/options.js';
import type { AnyOption } from './options/option.js';
import { parameterNames as p } from './release-names.js';
import type { JsonObject } from './release-rewrite.js';

/** The parameters an S3 bucket and key of the release's zip fill in. */
const codeGroup = {
  label: 'Release artifacts',
  parameters: {
    [p.codeBucket]: {
      label: 'Lambda code bucket',
      parameter: {
        Type: 'String',
        Description: 'S3 bucket in this region holding the Lambda zip of this release.',
        AllowedPattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$',
      },
    },
    [p.codeKey]: {
      label: 'Lambda code key',
      parameter: { Type: 'String', Description: "Key of the Lambda zip in that bucket (the release's file name)." },
    },
  },
} as const;

/** An option's parameter: its kind's type and constraints with its description. */
function parameterOf(o: AnyOption): JsonObject {
  const { Type, ...constraints } = o.kind.parameter;
  return { Type: Type!, Description: o.description, ...constraints };
}

export function releaseParameters(defaultCodeKey: string): JsonObject {
  return {
    ...Object.fromEntries(allOptions.map((o) => [o.name, parameterOf(o)])),
    [p.codeBucket]: codeGroup.parameters[p.codeBucket].parameter,
    [p.codeKey]: { ...codeGroup.parameters[p.codeKey].parameter, Default: defaultCodeKey },
  };
}

/**
 * The console's groups and labels (`AWS::CloudFormation::Interface`): the options' groups, in
 * their order, and the release's code last. Every parameter is in one group and has a label.
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-cloudformation-interface.html
 */
export function releaseInterface(): JsonObject {
  const label = (text: string) => ({ default: text });
  const code = Object.entries(codeGroup.parameters);
  return {
    'AWS::CloudFormation::Interface': {
      ParameterGroups: [
        ...optionGroups.map((g) => ({ Label: label(g.label), Parameters: g.options.map((o) => o.name) })),
        { Label: label(codeGroup.label), Parameters: code.map(([name]) => name) },
      ],
      ParameterLabels: Object.fromEntries([
        ...allOptions.map((o) => [o.name, label(o.label)]),
        ...code.map(([name, c]) => [name, label(c.label)]),
      ]),
    },
  };
}
