// A small set of short texts for the entity-resolution benchmark (bench/resolve.ts), each with
// the names a reader finds in it and the one real entity each of them names: the truth the
// resolved mentions are scored against (pairwise F1 over the names' occurrences).

export interface NamedOccurrence {
  /** The name as the text writes it. */
  surface: string;
  /** The real entity it names, by its canonical spelling. */
  entity: string;
  type: 'person' | 'organization';
}

export interface NamedText {
  file: string;
  text: string;
  names: NamedOccurrence[];
}

export interface NameSet {
  name: string;
  texts: NamedText[];
}
