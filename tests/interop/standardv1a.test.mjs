// Standard Webhooks' asymmetric signatures (`v1a`), which the `standardwebhooks` and `svix`
// libraries do not sign: the spec's scheme is Ed25519 over "<id>.<timestamp>.<body>", sent
// as `webhook-signature: v1a,<base64 signature>`, verified with the producer's public key
// `whpk_<base64 of the 32-byte key>`. Signed here with Node's crypto, checked first with
// Node's crypto.verify, and sent to an endpoint holding a whpk_ key beside a whsec_ secret
// (a producer moving from v1 to v1a): both kinds verify; one byte changed (body, id,
// timestamp, signature) or another key pair is refused; a redelivery is a duplicate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { daemonForTests } from './harness.mjs';

function keyPair() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url');
  return { publicKey, privateKey, whpk: `whpk_${raw.toString('base64')}` };
}
const PRODUCER = keyPair();
const OTHER = keyPair();
const SECRET = 'whsec_' + Buffer.from('hookbox interop: v1 key beside a v1a key').toString('base64');

const d = daemonForTests(`
  - name: std
    path: /hooks/standard
    provider: standard
    secrets: [{value: "${PRODUCER.whpk}"}, {value: "${SECRET}"}]
    routes:
      - events: ["*"]
        handlers: [{file: {dir: ./out}}]
`);

const now = () => String(Math.floor(Date.now() / 1000));
const v1a = (id, ts, body, key = PRODUCER.privateKey) =>
  `v1a,${sign(null, Buffer.from(`${id}.${ts}.${body}`), key).toString('base64')}`;
const send = (id, ts, sig, body) =>
  d.post('/hooks/standard', { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': sig }, body);
const stored = (id) => d.rows('std').filter((row) => row.event_id === id);
const payload = (n) =>
  JSON.stringify({ type: 'invoice.paid', timestamp: new Date().toISOString(), data: { n, note: 'caf\u00e9' } });

test('a v1a delivery is accepted and stored byte for byte, then a duplicate', async () => {
  const id = 'msg_v1a_0001';
  const ts = now();
  const body = payload(1);
  const sig = v1a(id, ts, body);
  // The spec's check, by Node itself, before hookbox sees it.
  const raw = Buffer.from(sig.slice(4), 'base64');
  assert.equal(verify(null, Buffer.from(`${id}.${ts}.${body}`), PRODUCER.publicKey, raw), true);
  const r = await send(id, ts, sig, body);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'accepted', event_id: id });
  assert.equal(stored(id)[0].event_type, 'invoice.paid');
  assert.equal(d.show('std', id).body, body);
  const later = String(Number(ts) + 2);
  const again = await send(id, later, v1a(id, later, body), body);
  assert.deepEqual(again.json, { status: 'duplicate', event_id: id });
});

test('the same endpoint still verifies v1 (whsec_), and a header carrying both', async () => {
  const id = 'msg_v1a_0002';
  const body = payload(2);
  const date = new Date();
  const ts = String(Math.floor(date.getTime() / 1000));
  const v1 = new Webhook(SECRET).sign(id, date, body);
  const r = await send(id, ts, `${v1} ${v1a(id, ts, body)}`, body);
  assert.equal(r.status, 200, r.text);
  const v1only = await send('msg_v1a_0003', ts, new Webhook(SECRET).sign('msg_v1a_0003', date, body), body);
  assert.equal(v1only.status, 200, v1only.text);
});

test('one byte changed (body, id, timestamp, signature) or another key pair: 401', async () => {
  const id = 'msg_v1a_0004';
  const ts = now();
  const body = payload(4);
  const sig = v1a(id, ts, body);
  const flipped = `v1a,${sig[4] === 'A' ? 'B' : 'A'}${sig.slice(5)}`;
  const cases = [
    ['body', id, ts, sig, body.replace('"n":4', '"n":5')],
    ['id', 'msg_v1a_0005', ts, sig, body],
    ['timestamp', id, String(Number(ts) - 1), sig, body],
    ['signature', id, ts, flipped, body],
    ['key pair', id, ts, v1a(id, ts, body, OTHER.privateKey), body],
  ];
  for (const [what, i, t, s, b] of cases) {
    const r = await send(i, t, s, b);
    assert.equal(r.status, 401, `${what}: ${r.text}`);
    assert.deepEqual(r.json, { error: 'signature mismatch' }, what);
  }
  const old = String(Math.floor(Date.now() / 1000) - 3600);
  const r = await send(id, old, v1a(id, old, body), body);
  assert.deepEqual(r.json, { error: 'timestamp outside tolerance' });
  assert.equal(stored(id).length + stored('msg_v1a_0005').length, 0);
});

test('hookbox send signs with the whsec_ secret, passing over the whpk_ key before it', async () => {
  const file = `${d.dir}/event.json`;
  writeFileSync(file, JSON.stringify({ id: 'msg_v1a_send', type: 'invoice.paid' }));
  const out = d.cli(['send', 'std', file, '--url', d.url('/hooks/standard')]);
  assert.match(out, /^200 .*"accepted"/);
  assert.match(d.storedHeader('std', 'msg_v1a_send', 'webhook-signature'), /^v1,/);
});
