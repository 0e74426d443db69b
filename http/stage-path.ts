// POST /stage destPath rules (SPEC.md 4 rule 3, DESIGN.md 10): a corpus-relative file path.
// A "?" suffix is refused unless it is the one allowlisted directive ?failStage5=<mode>,
// which is stripped and returned; "#" and other punctuation are part of the file name. Paths
// that could leave the corpus are refused. Every refusal is a named 400; nothing is written.

import { FAIL_STAGE5_MODES, type FailStage5Mode } from '../lib/engine/failure-directive.ts';
import { HttpError } from './errors.ts';

export interface StagePath {
  /** Corpus-relative, '/'-separated, no empty or dot segments. */
  path: string;
  failStage5: FailStage5Mode | null;
}

const directiveError = (error: string, message: string) => new HttpError(400, error, message, { valid_modes: [...FAIL_STAGE5_MODES] });

export function parseStagePath(destPath: string | undefined): StagePath {
  if (destPath === undefined || destPath === '') throw new HttpError(400, 'dest_path_missing', 'the destPath field is required');
  const question = destPath.indexOf('?');
  const path = question === -1 ? destPath : destPath.slice(0, question);
  let failStage5: FailStage5Mode | null = null;
  if (question !== -1) {
    const suffix = destPath.slice(question + 1);
    if (path === '') throw directiveError('directive_without_path', 'a ? suffix needs a file path before it');
    const [key, ...rest] = suffix.split('=');
    if (key !== 'failStage5') throw directiveError('unknown_suffix', `"?${suffix}" is not an allowed suffix; only ?failStage5=<mode> is`);
    if (rest.length === 0) throw directiveError('directive_missing_value', '?failStage5 needs =<mode>');
    const mode = rest.join('=');
    if (!(FAIL_STAGE5_MODES as readonly string[]).includes(mode)) throw directiveError('unknown_mode', `"${mode}" is not a failStage5 mode`);
    failStage5 = mode as FailStage5Mode;
  }
  return { path: confine(path), failStage5 };
}

/** The path, if it stays inside the corpus; else a named 400. */
function confine(path: string): string {
  if (path.includes('\u0000')) throw new HttpError(400, 'dest_path_invalid', 'destPath contains a NUL byte');
  if (path.includes('\\')) throw new HttpError(400, 'dest_path_invalid', 'destPath uses backslashes; use / between segments');
  if (path.startsWith('/') || /^[a-zA-Z]:/.test(path)) throw new HttpError(400, 'dest_path_invalid', 'destPath must be relative to the corpus');
  if (/%(2e|2f|5c|00)/i.test(path)) throw new HttpError(400, 'dest_path_invalid', 'destPath contains percent-encoded separators or dots');
  const segments = path.split('/');
  if (segments.some((s) => s === '..')) throw new HttpError(400, 'dest_path_invalid', 'destPath may not contain .. segments');
  if (segments.some((s) => s === '' || s === '.')) throw new HttpError(400, 'dest_path_invalid', 'destPath has an empty or . segment');
  if (segments.some((s) => s.startsWith('.'))) throw new HttpError(400, 'dest_path_invalid', 'destPath segments may not start with a dot (hidden files are not walked)');
  return path;
}
