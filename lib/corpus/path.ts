// Corpus-relative paths that come from outside (a /stage destPath, a key listed by the corpus
// bucket): '/'-separated, relative, no empty, '.', '..' or hidden segments, no NUL, backslash
// or percent-encoded separators. Anything else could leave the corpus or hide from the walk.

/** Why `path` may not name a file in the corpus, or null when it may. */
export function corpusPathProblem(path: string): string | null {
  if (path === '') return 'the path is empty';
  if (path.includes('\u0000')) return 'the path contains a NUL byte';
  if (path.includes('\\')) return 'the path uses backslashes; use / between segments';
  if (path.startsWith('/') || /^[a-zA-Z]:/.test(path)) return 'the path must be relative to the corpus';
  if (/%(2e|2f|5c|00)/i.test(path)) return 'the path contains percent-encoded separators or dots';
  const segments = path.split('/');
  if (segments.some((s) => s === '..')) return 'the path may not contain .. segments';
  if (segments.some((s) => s === '' || s === '.')) return 'the path has an empty or . segment';
  if (segments.some((s) => s.startsWith('.')))
    return 'path segments may not start with a dot (hidden files are not walked)';
  return null;
}
