// Interop with Svix's official Node SDK (`svix`): Svix sends Standard Webhooks under its own
// header names (svix-id, svix-timestamp, svix-signature). A delivery signed by
// `new Webhook(secret).sign(msgId, date, payload)` must be accepted by a `provider: standard`
// endpoint with the id from svix-id, stored byte for byte (the SDK's own `verify` accepts the
// stored body), and deduped; a signature from another secret must be refused with 401.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'svix';
import { daemonForTests } from './harness.mjs';

const SECRET = 'whsec_' + Buffer.from('hookbox interop: svix endpoint key 000001').toString('base64');
const wh = new Webhook(SECRET);
// A key whose base64 ends in '=', configured without it: padding is not the key.
const PADDED = 'whsec_' + Buffer.from('hookbox interop: svix unpadded key, 31').toString('base64');
const UNPADDED = PADDED.replace(/=+$/, '');

const d = daemonForTests(`
  - name: svix
    path: /hooks/svix
    provider: standard
    secrets: [{value: "${SECRET}"}]
    routes:
      - events: ["invoice.*"]
        handlers: [{file: {dir: ./out}}]
  - name: svix-unpadded
    path: /hooks/svix-unpadded
    provider: standard
    secrets: [{value: "${UNPADDED}"}]
`);

function svixHeaders(msgId, date, signature) {
  return {
    'svix-id': msgId,
    'svix-timestamp': String(Math.floor(date.getTime() / 1000)),
    'svix-signature': signature,
  };
}

test('a delivery signed by the svix SDK with svix-* headers is accepted, then a duplicate', async () => {
  const msgId = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
  const payload = JSON.stringify({
    type: 'invoice.paid',
    data: { id: 'inv_01HZX', amount: 1999, currency: 'USD', memo: 'na\u00efve caf\u00e9 \u{1F9FE}' },
  }, null, 2);
  const date = new Date();
  const h = svixHeaders(msgId, date, wh.sign(msgId, date, payload));
  assert.deepEqual(wh.verify(payload, h), JSON.parse(payload));

  const r = await d.post('/hooks/svix', h, payload);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'accepted', event_id: msgId });

  const rows = d.rows('svix');
  assert.equal(rows.length, 1);
  assert.equal(rows[0].event_id, msgId);
  assert.equal(rows[0].event_type, 'invoice.paid');
  assert.equal(rows[0].status, 'pending');
  const shown = d.show('svix', msgId);
  assert.equal(shown.body, payload);
  assert.equal(shown.jobs.length, 1);
  // The SDK verifies the stored bytes with the headers it made.
  assert.deepEqual(wh.verify(shown.body, h), JSON.parse(payload));

  const again = await d.post('/hooks/svix', h, payload);
  assert.equal(again.status, 200, again.text);
  assert.deepEqual(again.json, { status: 'duplicate', event_id: msgId });
  assert.equal(d.rows('svix')[0].duplicates, 1);
});

test('an svix event type no route matches is stored as ignored', async () => {
  const msgId = 'msg_ignored_type_0001';
  const payload = JSON.stringify({ type: 'customer.created', data: { id: 'cus_1' } });
  const date = new Date();
  const r = await d.post('/hooks/svix', svixHeaders(msgId, date, wh.sign(msgId, date, payload)), payload);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'ignored', event_id: msgId });
  const row = d.rows('svix').find((x) => x.event_id === msgId);
  assert.equal(row.status, 'ignored');
  assert.equal(row.event_type, 'customer.created');
});

test('an svix signature made with another secret is refused with 401', async () => {
  const other = new Webhook('whsec_' + Buffer.from('some other svix app key, 32 bytes').toString('base64'));
  const msgId = 'msg_wrong_secret_0001';
  const payload = JSON.stringify({ type: 'invoice.paid', data: {} });
  const date = new Date();
  const r = await d.post('/hooks/svix', svixHeaders(msgId, date, other.sign(msgId, date, payload)), payload);
  assert.equal(r.status, 401, r.text);
  assert.ok(!d.rows('svix').some((x) => x.event_id === msgId));
});

test('a captured svix delivery replayed with an added webhook-id is a duplicate', async () => {
  const msgId = 'msg_replayed_with_webhook_id';
  const payload = JSON.stringify({ type: 'invoice.paid', data: { id: 'inv_replay' } });
  const date = new Date();
  const captured = svixHeaders(msgId, date, wh.sign(msgId, date, payload));
  const first = await d.post('/hooks/svix', captured, payload);
  assert.deepEqual(first.json, { status: 'accepted', event_id: msgId });
  for (const forged of ['anything', 'msg_new_1', 'msg_new_2']) {
    const r = await d.post('/hooks/svix', { ...captured, 'webhook-id': forged }, payload);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { status: 'duplicate', event_id: msgId });
  }
  const rows = d.rows('svix').filter((x) => x.event_id === msgId);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].duplicates, 3);
  assert.ok(!d.rows('svix').some((x) => x.event_id.startsWith('msg_new') || x.event_id === 'anything'));
});

test('an unpadded whsec_ secret verifies what the SDK signs with either spelling', async () => {
  assert.ok(PADDED.endsWith('='));
  for (const [msgId, secret] of [['msg_signed_padded', PADDED], ['msg_signed_unpadded', UNPADDED]]) {
    const sdk = new Webhook(secret);
    const payload = JSON.stringify({ type: 'invoice.paid', data: { id: msgId } });
    const date = new Date();
    const r = await d.post('/hooks/svix-unpadded', svixHeaders(msgId, date, sdk.sign(msgId, date, payload)), payload);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { status: 'ignored', event_id: msgId });
  }
});
