// Interop with Paddle's official Node SDK (`@paddle/paddle-node-sdk`): a delivery signed as
// Paddle Billing signs (`Paddle-Signature: ts=…;h1=…`), first checked by the SDK's own
// `webhooks.isSignatureValid`, must be accepted by a `provider: paddle` endpoint, identified
// by the body's event_id and event_type, stored byte for byte (the SDK's `unmarshal` reads
// the stored body back as the event); one byte changed in the body, the signature or the
// timestamp, and the SDK and hookbox both refuse it; a redelivery is a duplicate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { Paddle } from '@paddle/paddle-node-sdk';
import { daemonForTests } from './harness.mjs';

const SECRET = 'pdl_ntfset_01hv8wt8nffez4p2t6typn4a5j_interopSecretKey0123456789';
const paddle = new Paddle('pdl_sdbx_apikey_interop');

const d = daemonForTests(`
  - name: paddle
    path: /hooks/paddle
    provider: paddle
    secrets: [{value: "${SECRET}"}]
    routes:
      - events: ["*"]
        handlers: [{file: {dir: ./out}}]
`);

// A customer.created notification as Paddle Billing sends it.
function paddleEvent(eventId) {
  return JSON.stringify({
    event_id: eventId,
    event_type: 'customer.created',
    occurred_at: '2026-12-01T10:00:00.000000Z',
    notification_id: `ntf_${eventId.slice(4)}`,
    data: {
      id: 'ctm_01hv8wt8nffez4p2t6typn4a5j',
      name: 'Caf\u00e9 cr\u00e8me \u2615',
      email: 'buyer@example.com',
      marketing_consent: false,
      status: 'active',
      custom_data: null,
      locale: 'en',
      created_at: '2026-12-01T10:00:00.000Z',
      updated_at: '2026-12-01T10:00:00.000Z',
      import_meta: null,
    },
  });
}

// The header Paddle sends: HMAC-SHA256 of "<ts>:<body>" with the destination's secret key.
function signature(body, { secret = SECRET, ts = Math.floor(Date.now() / 1000) } = {}) {
  return `ts=${ts};h1=${createHmac('sha256', secret).update(`${ts}:${body}`).digest('hex')}`;
}

const send = (body, header) => d.post('/hooks/paddle', { 'Paddle-Signature': header }, body);
const stored = (id) => d.rows('paddle').filter((row) => row.event_id === id);

test('a delivery the SDK accepts is accepted, identified and stored byte for byte', async () => {
  const body = paddleEvent('evt_01hv8x2acma2gz3he8r6ksj0wq');
  const header = signature(body);
  assert.equal(await paddle.webhooks.isSignatureValid(body, SECRET, header), true);
  const r = await send(body, header);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'accepted', event_id: 'evt_01hv8x2acma2gz3he8r6ksj0wq' });
  const rows = stored('evt_01hv8x2acma2gz3he8r6ksj0wq');
  assert.equal(rows.length, 1);
  assert.equal(rows[0].event_type, 'customer.created');
  const shown = d.show('paddle', 'evt_01hv8x2acma2gz3he8r6ksj0wq');
  assert.equal(shown.body, body, 'stored body must be the exact bytes Paddle signed');
  const event = await paddle.webhooks.unmarshal(shown.body, SECRET, header);
  assert.equal(event.eventId, 'evt_01hv8x2acma2gz3he8r6ksj0wq');
  assert.equal(event.data.name, 'Caf\u00e9 cr\u00e8me \u2615');

  // Paddle retries with a fresh signature: a duplicate, answered 200, stored once.
  const again = await send(body, signature(body, { ts: Math.floor(Date.now() / 1000) - 2 }));
  assert.deepEqual(again.json, { status: 'duplicate', event_id: 'evt_01hv8x2acma2gz3he8r6ksj0wq' });
  assert.equal(stored('evt_01hv8x2acma2gz3he8r6ksj0wq')[0].duplicates, 1);
});

test('one byte changed (body, signature, timestamp) or another secret: SDK and hookbox refuse', async () => {
  const body = paddleEvent('evt_01hv8x2acma2gz3he8r6ksj0wr');
  const ts = Math.floor(Date.now() / 1000);
  const header = signature(body, { ts });
  const flipped = header.slice(0, -1) + (header.endsWith('0') ? '1' : '0');
  const cases = [
    ['body', body.replace('buyer@', 'buyer2@'), header],
    ['signature', body, flipped],
    ['timestamp', body, header.replace(`ts=${ts}`, `ts=${ts - 1}`)],
    ['secret', body, signature(body, { secret: 'pdl_ntfset_another_destination' })],
  ];
  for (const [what, b, h] of cases) {
    assert.equal(await paddle.webhooks.isSignatureValid(b, SECRET, h), false, `SDK, ${what}`);
    const r = await send(b, h);
    assert.equal(r.status, 401, `${what}: ${r.text}`);
    assert.deepEqual(r.json, { error: 'signature mismatch' }, what);
  }
  assert.equal(stored('evt_01hv8x2acma2gz3he8r6ksj0wr').length, 0);
});

test('a timestamp older than the tolerance is refused with 401', async () => {
  const body = paddleEvent('evt_01hv8x2acma2gz3he8r6ksj0ws');
  const header = signature(body, { ts: Math.floor(Date.now() / 1000) - 3600 });
  assert.equal(await paddle.webhooks.isSignatureValid(body, SECRET, header), false);
  const r = await send(body, header);
  assert.deepEqual(r.json, { error: 'timestamp outside tolerance' });
  assert.equal(stored('evt_01hv8x2acma2gz3he8r6ksj0ws').length, 0);
});

test('hookbox send signs for Paddle as the SDK verifies', async () => {
  // `hookbox send` posts a Paddle-signed delivery to this config's listener; the signature
  // it sent (stored with the event) must be one Paddle's SDK accepts.
  const body = paddleEvent('evt_01hv8x2acma2gz3he8r6ksj0wt');
  const { writeFileSync } = await import('node:fs');
  const file = `${d.dir}/event.json`;
  writeFileSync(file, body);
  const out = d.cli(['send', 'paddle', file, '--url', d.url('/hooks/paddle')]);
  assert.match(out, /200/);
  assert.equal(stored('evt_01hv8x2acma2gz3he8r6ksj0wt').length, 1);
  const sent = d.storedHeader('paddle', 'evt_01hv8x2acma2gz3he8r6ksj0wt', 'Paddle-Signature');
  assert.equal(await paddle.webhooks.isSignatureValid(body, SECRET, sent), true, sent);
});
