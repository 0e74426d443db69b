// What conversion takes and gives, shared by the stage's entry (index.ts), its pool and each converter.

export type MediaType =
  | 'application/pdf'
  | 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'
  | 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'
  | 'text/markdown'
  | 'text/plain'
  | 'text/html';

export interface Converted {
  text: string;
  title: string | null;
  pages?: number;
}
