import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { v5 as uuidv5, validate, version } from 'uuid';
import {
  chunkKey,
  dedupKey,
  entityMentionKey,
  entityRelationshipKey,
  mintSourceDocumentId,
  qaKey,
  RECORD_NAMESPACE,
  referenceItemKey,
} from '../lib/ids.ts';

const DOC = '3f1c8a52-8a8e-4a43-9a1f-1d2a6b9c0e11';

test('keys of names beyond ASCII are uuid5 of their UTF-8 seed; a seed that is not well-formed still throws', () => {
  for (const name of ['Zoë Ørsted', 'Société Générale', '株式会社 東芝', 'Ensemble 𝄞']) {
    assert.is(entityMentionKey(DOC, name, 'person'), uuidv5(`em:${DOC}:${name}:person`, RECORD_NAMESPACE));
  }
  assert.throws(() => entityMentionKey(DOC, 'broken \ud800', 'person'), URIError);
});

test('keys are uuid5 over the seed texts exactly as docs/behaviour/tables.md lists them', () => {
  assert.is(qaKey(DOC, 3), uuidv5(`qa:${DOC}:3`, RECORD_NAMESPACE));
  assert.is(
    entityMentionKey(DOC, 'Acme Corp', 'organization'),
    uuidv5(`em:${DOC}:Acme Corp:organization`, RECORD_NAMESPACE),
  );
  assert.is(
    entityRelationshipKey(DOC, 'Ada Lovelace', 'works_for', 'Acme Corp'),
    uuidv5(`er:${DOC}:Ada Lovelace:works_for:Acme Corp`, RECORD_NAMESPACE),
  );
  assert.is(chunkKey(DOC, 0), uuidv5(`chunk:${DOC}:0`, RECORD_NAMESPACE));
  assert.is(referenceItemKey('https://example.org/a'), uuidv5('ref:https://example.org/a', RECORD_NAMESPACE));
  for (const k of [qaKey(DOC, 0), chunkKey(DOC, 0)]) assert.is(version(k), 5);
});

test('the namespace is frozen: known seeds keep their known keys', () => {
  // If this fails, every published citation would be orphaned. Do not "fix" the expectation.
  assert.is(RECORD_NAMESPACE, 'deb89df4-ce26-4f09-a87d-3f390dea4d44');
  assert.is(qaKey(DOC, 0), uuidv5(`qa:${DOC}:0`, 'deb89df4-ce26-4f09-a87d-3f390dea4d44'));
});

test('keys depend on every part of the seed', () => {
  const keys = new Set([
    qaKey(DOC, 0),
    qaKey(DOC, 1),
    qaKey(mintSourceDocumentId(), 0),
    entityMentionKey(DOC, 'Acme', 'org'),
    entityMentionKey(DOC, 'Acme', 'person'),
    entityMentionKey(DOC, 'acme', 'org'),
    entityRelationshipKey(DOC, 'a', 'p', 'b'),
    entityRelationshipKey(DOC, 'b', 'p', 'a'),
  ]);
  assert.is(keys.size, 8);
});

test('a dedup proposal key ignores the order of its pair', () => {
  const [a, b] = [qaKey(DOC, 1), qaKey(DOC, 2)];
  assert.is(dedupKey(a, b), dedupKey(b, a));
  assert.is.not(dedupKey(a, b), dedupKey(a, qaKey(DOC, 3)));
});

test('minted document ids are random v4 uuids', () => {
  const a = mintSourceDocumentId();
  assert.ok(validate(a));
  assert.is(version(a), 4);
  assert.is.not(a, mintSourceDocumentId());
});

test.run();
