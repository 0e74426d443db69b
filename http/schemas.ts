// Schema pieces more than one route's definition uses, and the check that a schema describes
// exactly the type a route answers with.

import { Type } from '@sinclair/typebox';
import { FAIL_STAGE5_MODES } from '../lib/failure-directive.ts';

/** true when A and B are the same type: `true satisfies Same<Static<typeof S>, T>` fails the typecheck otherwise. */
export type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

export const uuid = (description: string) => Type.String({ format: 'uuid', description });
export const failStage5Mode = (description: string) =>
  Type.Unsafe<string>({ type: 'string', enum: [...FAIL_STAGE5_MODES], description });
