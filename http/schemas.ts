// Schema pieces more than one route's definition uses, and the check that a schema describes
// exactly the type a route answers with.

import { Type } from '@sinclair/typebox';
import { FAIL_STAGE5_MODES } from '../lib/failure-directive.ts';

/** true when A and B are the same type: `true satisfies Same<Static<typeof S>, T>` fails the typecheck otherwise. */
export type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

export const uuid = (description: string) => Type.String({ format: 'uuid', description });
export const timestamp = (description: string) => Type.String({ format: 'date-time', description });
export const failStage5Mode = (description: string) =>
  Type.Unsafe<string>({ type: 'string', enum: [...FAIL_STAGE5_MODES], description });

export const RunWarningSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z][a-z0-9_]*$', description: 'snake_case, stable' }),
    message: Type.String({ description: 'for people' }),
    path: Type.Optional(Type.String({ description: 'the corpus-relative path of the item a warning concerns' })),
  },
  { additionalProperties: false },
);
