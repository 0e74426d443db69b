// Words that adorn a name without telling one entity from another: the legal form after a
// firm's name ("Acme Trading Co.", "Acme Trading Ltd") and the title before a person's ("Dr
// Jane Smith", "Jane Smith"). Entity resolution's normalised name drops them
// (stages/resolve/names.ts), and the mock reads a trailing legal form as an organisation and
// a leading title as a person (mock/names.ts). Lower case, without dots.

export const LEGAL_FORMS: ReadonlySet<string> = new Set([
  'ag',
  'bv',
  'co',
  'company',
  'corp',
  'corporation',
  'gmbh',
  'inc',
  'incorporated',
  'limited',
  'llc',
  'llp',
  'lp',
  'ltd',
  'nv',
  'plc',
  'pty',
  'sa',
  'sarl',
  'spa',
]);

export const HONORIFICS: ReadonlySet<string> = new Set([
  'dame',
  'dr',
  'lady',
  'lord',
  'miss',
  'mr',
  'mrs',
  'ms',
  'mx',
  'prof',
  'professor',
  'rev',
  'revd',
  'sir',
]);
