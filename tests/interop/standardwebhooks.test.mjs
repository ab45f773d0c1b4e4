// Interop with the Standard Webhooks reference library (`standardwebhooks`): a signature made
// by `new Webhook(secret).sign(msgId, date, payload)`, sent as webhook-id / webhook-timestamp /
// webhook-signature, must be accepted by a `provider: standard` endpoint with the event id
// taken from webhook-id and the type from the body's /type, stored byte for byte and deduped;
// another secret or an old timestamp must be refused with 401.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { daemonForTests } from './harness.mjs';

// Standard Webhooks secrets are `whsec_` + base64 of random bytes (24 to 64 of them).
const SECRET = 'whsec_' + Buffer.from('hookbox interop: standard webhooks key 01').toString('base64');
const OLD_SECRET = 'whsec_' + Buffer.from('hookbox interop: the rotated-out key 002').toString('base64');
const wh = new Webhook(SECRET);
// A key whose base64 ends in '=', configured without it: padding is not the key.
const PADDED = 'whsec_' + Buffer.from('hookbox interop: std unpadded key, 31b').toString('base64');
const UNPADDED = PADDED.replace(/=+$/, '');

const d = daemonForTests(`
  - name: std
    path: /hooks/standard
    provider: standard
    secrets: [{value: "${OLD_SECRET}"}, {value: "${SECRET}"}]
    routes:
      - events: ["*"]
        handlers: [{file: {dir: ./out}}]
  - name: std-unpadded
    path: /hooks/standard-unpadded
    provider: standard
    secrets: [{value: "${UNPADDED}"}]
`);

function payloadFor(type, extra = {}) {
  return JSON.stringify({
    type,
    timestamp: new Date().toISOString(),
    data: { id: 'usr_2hV9fA', email: 'ada@example.com', name: 'Ada Lovelace \u00e6\u00f8\u00e5', ...extra },
  });
}

function headers(msgId, date, signature) {
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(Math.floor(date.getTime() / 1000)),
    'webhook-signature': signature,
  };
}

async function send(webhook, msgId, payload, date = new Date()) {
  return d.post('/hooks/standard', headers(msgId, date, webhook.sign(msgId, date, payload)), payload);
}

test('a delivery signed by the standardwebhooks library is accepted, then a duplicate', async () => {
  const msgId = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
  const payload = payloadFor('user.created');
  const date = new Date();
  const h = headers(msgId, date, wh.sign(msgId, date, payload));
  // The library verifies its own headers (sanity of how we map them).
  assert.deepEqual(wh.verify(payload, h), JSON.parse(payload));

  const first = await d.post('/hooks/standard', h, payload);
  assert.equal(first.status, 200, first.text);
  assert.deepEqual(first.json, { status: 'accepted', event_id: msgId });

  const rows = d.rows('std').filter((r) => r.event_id === msgId);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].event_type, 'user.created');
  assert.equal(rows[0].status, 'pending');
  const shown = d.show('std', msgId);
  assert.equal(shown.body, payload);
  assert.equal(shown.jobs.length, 1);

  // The producer retries later: same id, new timestamp, new signature.
  const again = await send(wh, msgId, payload, new Date(Date.now() + 2000));
  assert.equal(again.status, 200, again.text);
  assert.deepEqual(again.json, { status: 'duplicate', event_id: msgId });
  const after = d.rows('std').filter((r) => r.event_id === msgId);
  assert.equal(after.length, 1);
  assert.equal(after[0].duplicates, 1);
});

test('a delivery signed with a still-configured rotated secret is accepted', async () => {
  const msgId = 'msg_rotated_secret_0001';
  const payload = payloadFor('user.updated');
  const r = await send(new Webhook(OLD_SECRET), msgId, payload);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'accepted', event_id: msgId });
});

test('several signatures in one header (producer mid-rotation): one valid is enough', async () => {
  const msgId = 'msg_multi_signature_0001';
  const payload = payloadFor('user.deleted');
  const date = new Date();
  const foreign = new Webhook('whsec_' + Buffer.from('a key hookbox does not know, 32b').toString('base64'));
  const signature = `${foreign.sign(msgId, date, payload)} ${wh.sign(msgId, date, payload)}`;
  assert.deepEqual(wh.verify(payload, headers(msgId, date, signature)), JSON.parse(payload));
  const r = await d.post('/hooks/standard', headers(msgId, date, signature), payload);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'accepted', event_id: msgId });
  assert.equal(d.show('std', msgId).body, payload);
});

test('another secret, an old timestamp or a changed body is refused with 401', async () => {
  const stranger = new Webhook('whsec_' + Buffer.from('a key hookbox does not know, 32b').toString('base64'));
  const wrong = await send(stranger, 'msg_wrong_secret', payloadFor('user.created'));
  assert.equal(wrong.status, 401, wrong.text);

  const oldDate = new Date(Date.now() - 3600 * 1000);
  const oldPayload = payloadFor('user.created');
  const oldHeaders = headers('msg_old_timestamp', oldDate, wh.sign('msg_old_timestamp', oldDate, oldPayload));
  assert.throws(() => wh.verify(oldPayload, oldHeaders), /too old/i);
  const old = await d.post('/hooks/standard', oldHeaders, oldPayload);
  assert.equal(old.status, 401, old.text);
  assert.deepEqual(old.json, { error: 'timestamp outside tolerance' });

  const date = new Date();
  const payload = payloadFor('user.created');
  const changed = await d.post('/hooks/standard',
    headers('msg_changed_body', date, wh.sign('msg_changed_body', date, payload)),
    payload.replace('Ada', 'Eve'));
  assert.equal(changed.status, 401, changed.text);

  const ids = new Set(d.rows('std').map((r) => r.event_id));
  for (const id of ['msg_wrong_secret', 'msg_old_timestamp', 'msg_changed_body']) {
    assert.ok(!ids.has(id), `${id} was stored`);
  }
});

test('an unpadded whsec_ secret verifies what the library signs with either spelling', async () => {
  assert.ok(PADDED.endsWith('='));
  for (const [msgId, secret] of [['msg_std_padded', PADDED], ['msg_std_unpadded', UNPADDED]]) {
    const lib = new Webhook(secret);
    const payload = payloadFor('user.updated');
    const date = new Date();
    const r = await d.post('/hooks/standard-unpadded', headers(msgId, date, lib.sign(msgId, date, payload)), payload);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { status: 'ignored', event_id: msgId });
  }
});
