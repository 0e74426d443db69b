// The named failures of stage 2. Every error a converter raises reaches the walk as one of
// these, so an item's failure always says which limit or defect stopped it.

import { IngestError } from '../../lib/errors.ts';

export type ConversionErrorCode =
  | 'too_large'
  | 'zip_bomb'
  | 'too_many_entries'
  | 'too_many_cells'
  | 'too_many_pages'
  | 'timeout'
  | 'memory_limit'
  | 'corrupt'
  | 'encrypted'
  | 'converter_crashed'
  | 'too_many_ocr_pages'
  | 'too_many_pixels'
  | 'ocr_crashed';

export class ConversionError extends IngestError {
  declare readonly code: ConversionErrorCode;
  constructor(code: ConversionErrorCode, message: string) {
    super(code, message);
  }
}
