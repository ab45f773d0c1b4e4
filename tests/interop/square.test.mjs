// Interop with Square's official Node SDK (`square`): Square signs a notification with
// base64 HMAC-SHA256, keyed with the subscription's signature key, over the notification URL
// followed by the body. Square's SDK only verifies, so each delivery is signed here with
// Node's crypto and first checked by the SDK's `WebhooksHelper.verifySignature`; a
// `provider: square` endpoint must then accept it, identified by the body's event_id and
// type, and stored byte for byte. One byte changed in the body, the URL (the query the
// request arrives with is part of it), the signature or the key: the SDK and hookbox both
// refuse it. A redelivery is a duplicate, and so is the same signed text split differently
// between the query and the body (bytes moved across the `?`), which the SDK accepts too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { WebhooksHelper } from 'square';
import { daemonForTests } from './harness.mjs';

const KEY = 'sq0wsk_interop-Xb3kP9qL2vN7tR4w';
// What Square's dashboard shows: the URL behind the operator's proxy, not hookbox's own.
const PUBLIC_URL = 'https://hooks.example.com/square/notifications';

const d = daemonForTests(`
  - name: square
    path: /hooks/square
    provider: square
    public_url: "${PUBLIC_URL}"
    secrets: [{value: "${KEY}"}]
    routes:
      - events: ["*"]
        handlers: [{file: {dir: ./out}}]
`);

// A payment.updated notification as Square sends it.
function squareEvent(eventId) {
  return JSON.stringify({
    merchant_id: 'MLEFBHHSJGVHD',
    type: 'payment.updated',
    event_id: eventId,
    created_at: '2026-12-01T10:00:00.000Z',
    data: {
      type: 'payment',
      id: 'KkAkhdMsgzn59SM8A89WgKwekxLZY',
      object: {
        payment: {
          id: 'KkAkhdMsgzn59SM8A89WgKwekxLZY',
          amount_money: { amount: 1250, currency: 'EUR' },
          note: 'Caf\u00e9 cr\u00e8me \u2615',
          status: 'COMPLETED',
          version: 3,
        },
      },
    },
  });
}

const sign = (url, body, key = KEY) => createHmac('sha256', key).update(url + body).digest('base64');
const sdkAccepts = (url, body, header, key = KEY) =>
  WebhooksHelper.verifySignature({
    requestBody: body,
    signatureHeader: header,
    signatureKey: key,
    notificationUrl: url,
  });
const send = (body, header, query = '') =>
  d.post(`/hooks/square${query}`, { 'X-Square-HmacSha256-Signature': header }, body);
const stored = (id) => d.rows('square').filter((row) => row.event_id === id);

test('a delivery the SDK accepts is accepted, identified and stored byte for byte', async () => {
  const id = '4b8e5c91-1f2a-4c3e-9d7b-0a6f5e2d1c01';
  const body = squareEvent(id);
  const header = sign(PUBLIC_URL, body);
  assert.equal(await sdkAccepts(PUBLIC_URL, body, header), true);
  const r = await send(body, header);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'accepted', event_id: id });
  const rows = stored(id);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].event_type, 'payment.updated');
  assert.equal(d.show('square', id).body, body, 'stored body must be the exact bytes Square signed');

  // Square retries the same notification: a duplicate, answered 200, stored once.
  const again = await send(body, header);
  assert.deepEqual(again.json, { status: 'duplicate', event_id: id });
  assert.equal(stored(id)[0].duplicates, 1);
});

test('the query the request arrives with is part of the signed URL', async () => {
  const id = '4b8e5c91-1f2a-4c3e-9d7b-0a6f5e2d1c02';
  const body = squareEvent(id);
  const query = '?tenant=caf%C3%A9&x=1';
  const header = sign(PUBLIC_URL + query, body);
  assert.equal(await sdkAccepts(PUBLIC_URL + query, body, header), true);
  // Posted without the query, or with one byte of it changed: not the URL Square signed.
  for (const q of ['', '?tenant=caf%C3%A9&x=2']) {
    assert.equal(await sdkAccepts(PUBLIC_URL + q, body, header), false, `SDK, query ${q}`);
    const r = await send(body, header, q);
    assert.equal(r.status, 401, `query ${q}: ${r.text}`);
    assert.deepEqual(r.json, { error: 'signature mismatch' });
  }
  const r = await send(body, header, query);
  assert.equal(r.status, 200, r.text);
  assert.equal(stored(id).length, 1);
});

test('one byte changed (body, URL, signature) or another key: SDK and hookbox refuse', async () => {
  const id = '4b8e5c91-1f2a-4c3e-9d7b-0a6f5e2d1c03';
  const body = squareEvent(id);
  const header = sign(PUBLIC_URL, body);
  const flipped = (header[0] === 'A' ? 'B' : 'A') + header.slice(1);
  const cases = [
    ['body', body.replace('"amount":1250', '"amount":1251'), header, PUBLIC_URL],
    ['signature', body, flipped, PUBLIC_URL],
    // Signed for another URL (a test endpoint's, say) and sent here.
    ['URL', body, sign(PUBLIC_URL.replace('hooks.', 'hookz.'), body), PUBLIC_URL],
    ['key', body, sign(PUBLIC_URL, body, 'sq0wsk_another-subscription'), PUBLIC_URL],
  ];
  for (const [what, b, h, url] of cases) {
    assert.equal(await sdkAccepts(url, b, h), false, `SDK, ${what}`);
    const r = await send(b, h);
    assert.equal(r.status, 401, `${what}: ${r.text}`);
    assert.deepEqual(r.json, { error: 'signature mismatch' }, what);
  }
  const none = await d.post('/hooks/square', {}, body);
  assert.equal(none.status, 401, none.text);
  assert.deepEqual(none.json, { error: 'missing signature' });
  assert.equal(stored(id).length, 0);
});

test('bytes moved across the ? verify for the SDK and hookbox alike: a duplicate, no new row', async () => {
  const id = '4b8e5c91-1f2a-4c3e-9d7b-0a6f5e2d1c05';
  const body = squareEvent(id);
  const query = '?token=abc';
  const header = sign(PUBLIC_URL + query, body);
  const r = await send(body, header, query);
  assert.deepEqual(r.json, { status: 'accepted', event_id: id });
  // The SDK runs URL and body together too: each move verifies for it as for hookbox.
  for (const [q, b] of [[`${query}{`, body.slice(1)], ['?token=ab', `c${body}`], ['', query + body]]) {
    assert.equal(await sdkAccepts(PUBLIC_URL + q, b, header), true, `SDK, ${q}`);
    const moved = await send(b, header, q);
    assert.equal(moved.status, 200, `${q}: ${moved.text}`);
    assert.deepEqual(moved.json, { status: 'duplicate', event_id: id }, q);
  }
  assert.equal(stored(id).length, 1);
  assert.equal(stored(id)[0].duplicates, 3);
  assert.equal(d.show('square', id).body, body);
});

test('hookbox send signs for Square as the SDK verifies', async () => {
  const id = '4b8e5c91-1f2a-4c3e-9d7b-0a6f5e2d1c04';
  const body = squareEvent(id);
  const file = `${d.dir}/event.json`;
  writeFileSync(file, body);
  // `hookbox send` signs for public_url (what Square would call) and posts to --url.
  const out = d.cli(['send', 'square', file, '--url', d.url('/hooks/square')]);
  assert.match(out, /200/);
  assert.equal(stored(id).length, 1);
  // The signature it sent (stored with the event) is one Square's SDK accepts for public_url.
  const sent = d.storedHeader('square', id, 'x-square-hmacsha256-signature');
  assert.equal(await sdkAccepts(PUBLIC_URL, body, sent), true, sent);
});
