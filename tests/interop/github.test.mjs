// Interop with GitHub: real example payloads from `@octokit/webhooks-examples` (the payloads
// GitHub documents, collected by the Octokit team), signed with Octokit's official
// `@octokit/webhooks-methods` `sign()` into X-Hub-Signature-256, sent with X-GitHub-Event
// and X-GitHub-Delivery. Every example of a handful of event types must be accepted, stored
// once each with the header's event type and the exact bytes sent (compact and 2-space
// indented: the signature covers raw bytes, not JSON meaning); tampering must give 401.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { sign, verify } from '@octokit/webhooks-methods';
import { daemonForTests } from './harness.mjs';

const require = createRequire(import.meta.url);
// The package's main is a JSON array: [{name, description, actions, properties, examples}].
const webhooks = require('@octokit/webhooks-examples');

const SECRET = 'interop-github-secret \u00e9\u00e8';  // non-ASCII: the secret is UTF-8 bytes
const EVENTS = ['push', 'pull_request', 'issues', 'issue_comment', 'release', 'ping',
  'workflow_run', 'check_run'];
const ROUTED = ['push', 'pull_request', 'issues', 'issue_comment', 'release', 'workflow_run',
  'check_run'];  // `ping` matches no route: stored `ignored`

const d = daemonForTests(`
  - name: gh
    path: /hooks/github
    provider: github
    secrets: [{value: ${JSON.stringify(SECRET)}}]
    routes:
      - events: ${JSON.stringify(ROUTED)}
        handlers: [{file: {dir: ./out}}]
`);

function examplesOf(name) {
  const entry = webhooks.find((w) => w.name === name);
  assert.ok(entry, `@octokit/webhooks-examples has no "${name}" event`);
  assert.ok(entry.examples.length > 0, `no examples for "${name}"`);
  return entry.examples;
}

async function deliver(event, delivery, payload, signature) {
  return d.post('/hooks/github', {
    'X-GitHub-Event': event,
    'X-GitHub-Delivery': delivery,
    'X-Hub-Signature-256': signature ?? await sign(SECRET, payload),
    'User-Agent': 'GitHub-Hookshot/interop',
  }, payload);
}

test('every example payload of several event types is accepted and stored exactly', async () => {
  const sent = [];  // {event, delivery, payload}
  for (const event of EVENTS) {
    examplesOf(event).forEach((example, i) => {
      // GitHub sends compact JSON for application/json; the indented form proves that the
      // signature and the stored body are about bytes, not parsed JSON.
      sent.push({ event, delivery: randomUUID(), payload: JSON.stringify(example) });
      sent.push({ event, delivery: randomUUID(), payload: JSON.stringify(example, null, 2) });
      if (i === 0) {
        // Raw UTF-8 beyond ASCII in a body (GitHub does send non-ASCII names, titles, emoji).
        const withUnicode = { ...example, hookbox_note: 'Gr\u00fc\u00dfe \u2014 \u{1F680} \u6f22\u5b57' };
        sent.push({ event, delivery: randomUUID(), payload: JSON.stringify(withUnicode) });
      }
    });
  }
  assert.ok(sent.length >= 100, `only ${sent.length} deliveries`);

  for (const s of sent) {
    const sig = await sign(SECRET, s.payload);
    assert.ok(await verify(SECRET, s.payload, sig));  // the SDK agrees with itself
    const r = await deliver(s.event, s.delivery, s.payload, sig);
    assert.equal(r.status, 200, `${s.event} ${s.delivery}: ${r.text}`);
    const expected = ROUTED.includes(s.event) ? 'accepted' : 'ignored';
    assert.deepEqual(r.json, { status: expected, event_id: s.delivery }, `${s.event}`);
  }

  const rows = d.rows('gh');
  const byId = new Map(rows.map((row) => [row.event_id, row]));
  for (const s of sent) {
    const row = byId.get(s.delivery);
    assert.ok(row, `no stored row for ${s.event} ${s.delivery}`);
    assert.equal(row.event_type, s.event);
    assert.equal(row.id_source, 'header:X-GitHub-Delivery');
    assert.equal(row.status, ROUTED.includes(s.event) ? 'pending' : 'ignored');
    assert.equal(row.duplicates, 0);
  }
  assert.equal(sent.filter((s) => byId.has(s.delivery)).length, sent.length);
  assert.equal(rows.length, sent.length, 'stored rows count equals deliveries sent');

  // Bodies, through `inbox show --json`: one compact, one indented and one non-ASCII per type.
  const picks = [];
  for (const event of EVENTS) {
    const ofType = sent.filter((s) => s.event === event);
    picks.push(ofType[0], ofType[1], ofType[2], ofType[ofType.length - 1]);
  }
  for (const s of picks) {
    const shown = d.show('gh', s.delivery);
    assert.equal(shown.event_id, s.delivery);
    assert.equal(shown.event_type, s.event);
    assert.equal(shown.body, s.payload, `${s.event} ${s.delivery}: stored body differs`);
    assert.ok(await verify(SECRET, shown.body, await sign(SECRET, s.payload)));
    assert.equal(shown.jobs.length, ROUTED.includes(s.event) ? 1 : 0);
  }
});

test('a redelivery (same X-GitHub-Delivery) is a duplicate', async () => {
  const payload = JSON.stringify(examplesOf('push')[0]);
  const delivery = randomUUID();
  const first = await deliver('push', delivery, payload);
  assert.deepEqual(first.json, { status: 'accepted', event_id: delivery });
  const again = await deliver('push', delivery, payload);
  assert.equal(again.status, 200, again.text);
  assert.deepEqual(again.json, { status: 'duplicate', event_id: delivery });
  const row = d.rows('gh').find((r) => r.event_id === delivery);
  assert.equal(row.duplicates, 1);
});

test('a tampered payload or a signature from another secret is refused with 401', async () => {
  const payload = JSON.stringify(examplesOf('pull_request')[0]);
  const signature = await sign(SECRET, payload);

  const tamperedId = randomUUID();
  // Same JSON meaning, different bytes: still tampering as far as the signature goes.
  const tampered = await deliver('pull_request', tamperedId, JSON.stringify(JSON.parse(payload), null, 1), signature);
  assert.equal(tampered.status, 401, tampered.text);
  assert.equal(typeof tampered.json?.error, 'string');

  assert.ok(payload.includes('"action":"'));
  const changedId = randomUUID();
  const changed = await deliver('pull_request', changedId,
    payload.replace('"action":"', '"action":"x'), signature);
  assert.equal(changed.status, 401, changed.text);

  const wrongId = randomUUID();
  const wrong = await deliver('pull_request', wrongId, payload, await sign('not-the-secret', payload));
  assert.equal(wrong.status, 401, wrong.text);

  const ids = new Set(d.rows('gh').map((r) => r.event_id));
  for (const id of [tamperedId, changedId, wrongId]) assert.ok(!ids.has(id), `${id} was stored`);
});
