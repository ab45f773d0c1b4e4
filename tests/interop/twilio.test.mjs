// Interop with Twilio's official Node SDK (`twilio`): Twilio signs each request with
// X-Twilio-Signature, base64 HMAC-SHA1 keyed with the account's auth token over the URL it
// called (public_url plus the query) followed by the form's fields sorted by name; a JSON
// body is bound instead by a bodySHA256 query parameter, and the URL alone is signed.
// Signatures here come from the SDK's own getExpectedTwilioSignature, and its
// validateRequest / validateRequestWithBody agree before hookbox is asked. A
// `provider: twilio` endpoint must accept them, store the form byte for byte, take the id
// from the signed message's hash (never from I-Twilio-Idempotency-Token, which Twilio does
// not sign) and a type from a `form:` field; one byte changed in a form value, the URL, the
// signature or the token, and both refuse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import twilio from 'twilio';
import { daemonForTests } from './harness.mjs';

const TOKEN = 'b9e2f3c4d5a6b7c8d9e0f1a2b3c4d5e6';
const PUBLIC_URL = 'https://hooks.example.com/twilio/status';

const d = daemonForTests(`
  - name: twilio
    path: /hooks/twilio
    provider: twilio
    public_url: "${PUBLIC_URL}"
    secrets: [{value: "${TOKEN}"}]
    routes:
      - events: ["*"]
        handlers: [{file: {dir: ./out}}]
  - name: twilio-typed
    path: /hooks/twilio-typed
    provider: twilio
    public_url: "${PUBLIC_URL}"
    secrets: [{value: "${TOKEN}"}]
    event_id: form:MessageSid
    event_type: form:MessageStatus
    routes:
      - events: ["undelivered", "failed"]
        handlers: [{file: {dir: ./out}}]
`);

const FORM = 'application/x-www-form-urlencoded';
// A message status callback as Twilio posts it.
function statusCallback(sid, status = 'delivered') {
  return {
    AccountSid: 'AC0123456789abcdef0123456789abcdef',
    ApiVersion: '2010-04-01',
    Body: 'Caf\u00e9 cr\u00e8me \u2615 & 100% +1',
    From: '+15005550006',
    MessageSid: sid,
    MessageStatus: status,
    SmsSid: sid,
    To: '+14155552671',
  };
}
const formBody = (params) => new URLSearchParams(params).toString();
const sign = (url, params, token = TOKEN) => twilio.getExpectedTwilioSignature(token, url, params);
const send = (path, body, signature, extra = {}) =>
  d.post(path, { 'content-type': FORM, 'X-Twilio-Signature': signature, ...extra }, body);
const stored = (endpoint, id) => d.rows(endpoint).filter((row) => row.event_id === id);
// The default id: the hash of the message the SDK signs, the URL then the fields sorted by
// name, each name then value (a JSON body's URL carries its bodySHA256 and no fields).
const signedId = (url, params = {}) => {
  const signed = url + Object.keys(params).sort().map((k) => k + params[k]).join('');
  return `sha256:${createHash('sha256').update(signed).digest('hex')}`;
};

test('a form the SDK validates is accepted, identified by its signed message, stored as sent', async () => {
  const params = statusCallback('SM0000000000000000000000000000001');
  const body = formBody(params);
  const signature = sign(PUBLIC_URL, params);
  assert.equal(twilio.validateRequest(TOKEN, signature, PUBLIC_URL, params), true);
  // The id is the hash of the signed message: public_url and the fields sorted
  // by name, as the SDK signs them, so the same form spelled another way is the same event.
  const id = signedId(PUBLIC_URL, params);
  const r = await send('/hooks/twilio', body, signature, { 'I-Twilio-Idempotency-Token': 'idem-0001' });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'accepted', event_id: id });
  const rows = stored('twilio', id);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].event_type, 'twilio');
  assert.equal(rows[0].id_source, 'sha256');
  assert.equal(d.show('twilio', id).body, body, 'stored body must be the bytes Twilio sent');

  // Twilio retries with the same token: a duplicate, stored once. The token is not signed:
  // a replay under another token, or none, is the same event.
  for (const token of ['idem-0001', 'idem-0002', undefined]) {
    const extra = token ? { 'I-Twilio-Idempotency-Token': token } : {};
    const again = await send('/hooks/twilio', body, signature, extra);
    assert.deepEqual(again.json, { status: 'duplicate', event_id: id }, `token ${token}`);
  }
  assert.equal(d.rows('twilio').length, 1);
});

test('form: fields name the id and the type', async () => {
  const params = statusCallback('SM0000000000000000000000000000002', 'undelivered');
  const r = await send('/hooks/twilio-typed', formBody(params), sign(PUBLIC_URL, params));
  assert.deepEqual(r.json, { status: 'accepted', event_id: 'SM0000000000000000000000000000002' });
  const rows = stored('twilio-typed', 'SM0000000000000000000000000000002');
  assert.equal(rows[0].event_type, 'undelivered');
  assert.equal(rows[0].id_source, 'form:MessageSid');
});

test('the query the request arrives with is part of the signed URL', async () => {
  const params = statusCallback('SM0000000000000000000000000000003');
  const query = '?tenant=caf%C3%A9&x=1';
  const signature = sign(PUBLIC_URL + query, params);
  assert.equal(twilio.validateRequest(TOKEN, signature, PUBLIC_URL + query, params), true);
  for (const q of ['', '?tenant=caf%C3%A9&x=2']) {
    assert.equal(twilio.validateRequest(TOKEN, signature, PUBLIC_URL + q, params), false, `SDK ${q}`);
    const r = await send(`/hooks/twilio${q}`, formBody(params), signature);
    assert.equal(r.status, 401, `query ${q}: ${r.text}`);
  }
  const r = await send(`/hooks/twilio${query}`, formBody(params), signature);
  assert.equal(r.status, 200, r.text);
});

test('signed with the default port or without it: the SDK and hookbox accept both, not another port', async () => {
  const params = statusCallback('SM0000000000000000000000000000008');
  const withPort = PUBLIC_URL.replace('hooks.example.com', 'hooks.example.com:443');
  const otherPort = PUBLIC_URL.replace('hooks.example.com', 'hooks.example.com:8443');
  const query = '?tenant=a';
  for (const [what, url, ok] of [['443', withPort, true], ['443 and a query', withPort + query, true],
    ['8443', otherPort, false]]) {
    const signature = sign(url, params);
    const path = `/hooks/twilio${url.includes('?') ? query : ''}`;
    const asCalled = PUBLIC_URL + (url.includes('?') ? query : '');
    assert.equal(twilio.validateRequest(TOKEN, signature, asCalled, params), ok, `SDK, ${what}`);
    const before = d.rows('twilio').length;
    const r = await send(path, formBody(params), signature);
    assert.equal(r.status, ok ? 200 : 401, `${what}: ${r.text}`);
    // Stored once, under the canonical spelling (public_url as configured, no port).
    if (ok) assert.deepEqual(r.json, { status: 'accepted', event_id: signedId(asCalled, params) }, what);
    assert.equal(d.rows('twilio').length, before + (ok ? 1 : 0), `stored, ${what}`);
  }
});

test('one byte changed (form value, signature) or another token: SDK and hookbox refuse', async () => {
  const params = statusCallback('SM0000000000000000000000000000004');
  const signature = sign(PUBLIC_URL, params);
  const changed = { ...params, Body: params.Body.replace('+1', '+2') };
  const flipped = (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1);
  const cases = [
    ['form value', changed, signature],
    ['added field', { ...params, Extra: '' }, signature],
    ['signature', params, flipped],
    ['token', params, sign(PUBLIC_URL, params, 'another-auth-token')],
  ];
  const before = d.rows('twilio').length;
  for (const [what, p, s] of cases) {
    assert.equal(twilio.validateRequest(TOKEN, s, PUBLIC_URL, p), false, `SDK, ${what}`);
    const r = await send('/hooks/twilio', formBody(p), s, { 'I-Twilio-Idempotency-Token': 'idem-4' });
    assert.equal(r.status, 401, `${what}: ${r.text}`);
    assert.deepEqual(r.json, { error: 'signature mismatch' }, what);
  }
  assert.equal(d.rows('twilio').length, before);
});

test('a JSON body bound by bodySHA256: accepted as the SDK validates it; another body refused', async () => {
  const body = JSON.stringify({ event: 'com.twilio.messaging.message.delivered', sid: 'SM5', note: 'caf\u00e9' });
  const hash = createHash('sha256').update(body).digest('hex');
  const url = `${PUBLIC_URL}?bodySHA256=${hash}`;
  const signature = sign(url, {});
  assert.equal(twilio.validateRequestWithBody(TOKEN, signature, url, body), true);
  const headers = { 'content-type': 'application/json', 'X-Twilio-Signature': signature,
    'I-Twilio-Idempotency-Token': 'idem-5' };
  const r = await d.post(`/hooks/twilio?bodySHA256=${hash}`, headers, body);
  assert.equal(r.status, 200, r.text);
  // The signed message is the URL alone, and it holds the body's hash.
  assert.deepEqual(r.json, { status: 'accepted', event_id: signedId(url) });
  assert.equal(d.show('twilio', signedId(url)).body, body);
  const other = body.replace('SM5', 'SM6');
  assert.equal(twilio.validateRequestWithBody(TOKEN, signature, url, other), false);
  const refused = await d.post(`/hooks/twilio?bodySHA256=${hash}`, { ...headers, 'I-Twilio-Idempotency-Token': 'idem-6' }, other);
  assert.deepEqual(refused.json, { error: 'signature mismatch' });
});

test('hookbox send signs a form as Twilio does', async () => {
  const params = statusCallback('SM0000000000000000000000000000007');
  const file = `${d.dir}/callback.form`;
  writeFileSync(file, formBody(params));
  const out = d.cli(['send', 'twilio-typed', file, '--url', d.url('/hooks/twilio-typed')]);
  assert.match(out, /200/);
  assert.equal(stored('twilio-typed', 'SM0000000000000000000000000000007').length, 1);
  // The signature it sent (stored with the event) is one Twilio's SDK accepts for public_url.
  const sent = d.storedHeader('twilio-typed', 'SM0000000000000000000000000000007', 'X-Twilio-Signature');
  assert.equal(twilio.validateRequest(TOKEN, sent, PUBLIC_URL, params), true, sent);
});
