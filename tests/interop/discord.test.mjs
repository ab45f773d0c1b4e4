// Interop with Discord's official `discord-interactions` package: Discord signs a webhook
// event with its application's Ed25519 private key over "<X-Signature-Timestamp><body>" and
// sends the hex signature in X-Signature-Ed25519. Deliveries are signed here with Node's
// crypto and first checked by the package's `verifyKey`; a `provider: discord` endpoint
// holding the application's public key (hex) must then agree: a PING (type 0) is answered
// 204 and not stored, an event is stored byte for byte with its body hash as id and
// /event/type as type; one byte changed (body, timestamp, signature) or another key, and
// both refuse it; a redelivery is a duplicate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { verifyKey } from 'discord-interactions';
import { daemonForTests } from './harness.mjs';

function keyPair() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const hex = Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url').toString('hex');
  return { privateKey, hex };
}
const APP = keyPair();
const OTHER = keyPair();

const d = daemonForTests(`
  - name: discord
    path: /hooks/discord
    provider: discord
    secrets: [{value: "${APP.hex}"}]
    routes:
      - events: ["*"]
        handlers: [{file: {dir: ./out}}]
`);

const now = () => String(Math.floor(Date.now() / 1000));
const signature = (ts, body, key = APP.privateKey) =>
  sign(null, Buffer.from(ts + body), key).toString('hex');
const send = (body, sig, ts) =>
  d.post('/hooks/discord', { 'X-Signature-Ed25519': sig, 'X-Signature-Timestamp': ts }, body);
const stored = (id) => d.rows('discord').filter((row) => row.event_id === id);
const bodyId = (body) => `sha256:${createHash('sha256').update(body).digest('hex')}`;

// An APPLICATION_AUTHORIZED webhook event as Discord sends it.
function discordEvent(userId) {
  return JSON.stringify({
    version: 1,
    application_id: '1234567890123456789',
    type: 1,
    event: {
      type: 'APPLICATION_AUTHORIZED',
      timestamp: new Date().toISOString(),
      data: {
        integration_type: 0,
        scopes: ['applications.commands'],
        user: { id: userId, username: 'caf\u00e9_cr\u00e8me', global_name: 'Caf\u00e9 \u2615' },
      },
    },
  });
}

test('a PING the SDK accepts is answered 204 and not stored', async () => {
  const body = JSON.stringify({ version: 1, application_id: '1234567890123456789', type: 0 });
  const ts = now();
  const sig = signature(ts, body);
  assert.equal(await verifyKey(body, sig, ts, APP.hex), true);
  const r = await send(body, sig, ts);
  assert.equal(r.status, 204, r.text);
  assert.equal(r.text, '');
  assert.equal(d.rows('discord').length, 0);
  // An unsigned PING is a forgery like any other.
  const forged = await send(body, signature(ts, body, OTHER.privateKey), ts);
  assert.equal(forged.status, 401, forged.text);
});

test('an event the SDK accepts is accepted, identified by its body hash, stored byte for byte', async () => {
  const body = discordEvent('80351110224678912');
  const ts = now();
  const sig = signature(ts, body);
  assert.equal(await verifyKey(body, sig, ts, APP.hex), true);
  const r = await send(body, sig, ts);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'accepted', event_id: bodyId(body) });
  const rows = stored(bodyId(body));
  assert.equal(rows.length, 1);
  assert.equal(rows[0].event_type, 'APPLICATION_AUTHORIZED');
  assert.equal(d.show('discord', bodyId(body)).body, body);

  // Discord retries the same event with a fresh timestamp: a duplicate, stored once.
  const later = String(Number(ts) + 1);
  const again = await send(body, signature(later, body), later);
  assert.deepEqual(again.json, { status: 'duplicate', event_id: bodyId(body) });
  assert.equal(stored(bodyId(body))[0].duplicates, 1);
});

test('one byte changed (body, timestamp, signature) or another key: SDK and hookbox refuse', async () => {
  const body = discordEvent('80351110224678913');
  const ts = now();
  const sig = signature(ts, body);
  const flipped = (sig[0] === '0' ? '1' : '0') + sig.slice(1);
  const cases = [
    ['body', body.replace('80351110224678913', '80351110224678914'), sig, ts],
    ['timestamp', body, sig, String(Number(ts) - 1)],
    ['signature', body, flipped, ts],
    ['key', body, signature(ts, body, OTHER.privateKey), ts],
  ];
  for (const [what, b, s, t] of cases) {
    assert.equal(await verifyKey(b, s, t, APP.hex), false, `SDK, ${what}`);
    const r = await send(b, s, t);
    assert.equal(r.status, 401, `${what}: ${r.text}`);
    assert.deepEqual(r.json, { error: 'signature mismatch' }, what);
  }
  assert.equal(stored(bodyId(body)).length, 0);
});

test('an old timestamp, or no signature, is refused with 401', async () => {
  const body = discordEvent('80351110224678915');
  const old = String(Math.floor(Date.now() / 1000) - 3600);
  const r = await send(body, signature(old, body), old);
  assert.deepEqual(r.json, { error: 'timestamp outside tolerance' });
  const none = await d.post('/hooks/discord', {}, body);
  assert.deepEqual(none.json, { error: 'missing signature' });
  assert.equal(stored(bodyId(body)).length, 0);
});

test('hookbox send explains that only Discord can sign', async () => {
  const file = `${d.dir}/event.json`;
  writeFileSync(file, discordEvent('80351110224678916'));
  assert.throws(() => d.cli(['send', 'discord', file, '--url', d.url('/hooks/discord')]),
    /status 1\): .*public keys only: only the producer holds the private key/s);
});
