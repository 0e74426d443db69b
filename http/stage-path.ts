// POST /stage destPath rules (docs/behaviour/routes.md#stage-destpath-rules): a corpus-relative
// file path. A "?" suffix is refused unless it is the one allowlisted directive ?failStage5=<mode>,
// which is stripped and returned; "#" and other punctuation are part of the file name. Paths that
// could leave the corpus are refused. Every refusal is a named 400; nothing is written.

import { FAIL_STAGE5_MODES, type FailStage5Mode } from '../lib/failure-directive.ts';
import { corpusPathProblem } from '../lib/corpus/path.ts';
import { HttpError } from './errors.ts';

export interface StagePath {
  /** Corpus-relative, '/'-separated, no empty or dot segments. */
  path: string;
  failStage5: FailStage5Mode | null;
}

const directiveError = (error: string, message: string) =>
  new HttpError(400, error, message, { valid_modes: [...FAIL_STAGE5_MODES] });

export function parseStagePath(destPath: string | undefined): StagePath {
  if (destPath === undefined || destPath === '')
    throw new HttpError(400, 'dest_path_missing', 'the destPath field is required');
  const question = destPath.indexOf('?');
  const path = question === -1 ? destPath : destPath.slice(0, question);
  let failStage5: FailStage5Mode | null = null;
  if (question !== -1) {
    const suffix = destPath.slice(question + 1);
    if (path === '') throw directiveError('directive_without_path', 'a ? suffix needs a file path before it');
    const [key, ...rest] = suffix.split('=');
    if (key !== 'failStage5')
      throw directiveError('unknown_suffix', `"?${suffix}" is not an allowed suffix; only ?failStage5=<mode> is`);
    if (rest.length === 0) throw directiveError('directive_missing_value', '?failStage5 needs =<mode>');
    const mode = rest.join('=');
    if (!(FAIL_STAGE5_MODES as readonly string[]).includes(mode))
      throw directiveError('unknown_mode', `"${mode}" is not a failStage5 mode`);
    failStage5 = mode as FailStage5Mode;
  }
  return { path: confine(path), failStage5 };
}

/** The path, if it stays inside the corpus; else a named 400. */
function confine(path: string): string {
  const problem = corpusPathProblem(path);
  if (problem !== null) throw new HttpError(400, 'dest_path_invalid', `destPath: ${problem}`);
  return path;
}
