// Interop with Stripe's official Node SDK (`stripe`): a Stripe-Signature header made by
// `stripe.webhooks.generateTestHeaderString` must be accepted by a `provider: stripe` endpoint,
// deduped on the body's `id`, stored byte for byte; a header made with another secret or an
// old timestamp must be refused with 401. The stored body is checked by the SDK's own
// `constructEvent` too, so what hookbox hands to handlers is what Stripe signed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Stripe from 'stripe';
import { daemonForTests } from './harness.mjs';

const SECRET = 'whsec_interop_stripe_secret_0123456789';
const stripe = new Stripe('sk_test_x');

const d = daemonForTests(`
  - name: stripe
    path: /hooks/stripe
    provider: stripe
    secrets: [{value: "${SECRET}"}]
    routes:
      - events: ["*"]
        handlers: [{file: {dir: ./out}}]
`);

// A Stripe event as the API sends it: pretty-printed with 2 spaces and a trailing newline
// is how Stripe's webhook bodies look on the wire, and the signature covers those bytes.
function stripeEvent(id, type = 'invoice.paid') {
  return JSON.stringify({
    id,
    object: 'event',
    api_version: '2024-06-20',
    created: Math.floor(Date.now() / 1000),
    data: {
      object: {
        id: 'in_1PbA2bCdEfGhIjKl',
        object: 'invoice',
        amount_paid: 4200,
        currency: 'eur',
        customer: 'cus_Q1w2E3r4T5y6U7',
        description: 'Caf\u00e9 cr\u00e8me \u2014 monthly \u2615',
        status: 'paid',
      },
    },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  }, null, 2) + '\n';
}

function send(payload, header) {
  return d.post('/hooks/stripe', { 'Stripe-Signature': header }, payload);
}

test('a delivery signed by the Stripe SDK is accepted and stored byte for byte', async () => {
  const payload = stripeEvent('evt_1InteropAccepted');
  const header = stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET });
  const r = await send(payload, header);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'accepted', event_id: 'evt_1InteropAccepted' });

  const rows = d.rows('stripe').filter((row) => row.event_id === 'evt_1InteropAccepted');
  assert.equal(rows.length, 1);
  assert.equal(rows[0].endpoint, 'stripe');
  assert.equal(rows[0].event_type, 'invoice.paid');
  assert.equal(rows[0].status, 'pending');
  assert.equal(rows[0].duplicates, 0);

  const shown = d.show('stripe', 'evt_1InteropAccepted');
  assert.equal(shown.body, payload, 'stored body must be the exact bytes Stripe signed');
  assert.equal(shown.jobs.length, 1);
  // The official SDK verifies the stored body against the header it made.
  const event = stripe.webhooks.constructEvent(shown.body, header, SECRET);
  assert.equal(event.id, 'evt_1InteropAccepted');
  assert.equal(event.data.object.description, 'Caf\u00e9 cr\u00e8me \u2014 monthly \u2615');
});

test('a redelivery of the same event (fresh signature) is a duplicate', async () => {
  const payload = stripeEvent('evt_1InteropRedelivered', 'customer.subscription.updated');
  const first = await send(payload, stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET }));
  assert.equal(first.status, 200, first.text);
  assert.deepEqual(first.json, { status: 'accepted', event_id: 'evt_1InteropRedelivered' });

  // Stripe re-signs each retry with a new timestamp.
  const again = await send(payload, stripe.webhooks.generateTestHeaderString({
    payload, secret: SECRET, timestamp: Math.floor(Date.now() / 1000) - 5,
  }));
  assert.equal(again.status, 200, again.text);
  assert.deepEqual(again.json, { status: 'duplicate', event_id: 'evt_1InteropRedelivered' });

  const rows = d.rows('stripe').filter((row) => row.event_id === 'evt_1InteropRedelivered');
  assert.equal(rows.length, 1);
  assert.equal(rows[0].event_type, 'customer.subscription.updated');
  assert.equal(rows[0].duplicates, 1);
});

test('a header signed with another secret is refused with 401 and nothing is stored', async () => {
  const payload = stripeEvent('evt_1InteropWrongSecret');
  const header = stripe.webhooks.generateTestHeaderString({
    payload, secret: 'whsec_some_other_account_secret',
  });
  const r = await send(payload, header);
  assert.equal(r.status, 401, r.text);
  assert.equal(typeof r.json?.error, 'string');
  assert.ok(!r.text.includes(SECRET));
  assert.equal(d.rows().filter((row) => row.event_id === 'evt_1InteropWrongSecret').length, 0);
});

test('a header with a timestamp older than the tolerance is refused with 401', async () => {
  const payload = stripeEvent('evt_1InteropOldTimestamp');
  const header = stripe.webhooks.generateTestHeaderString({
    payload, secret: SECRET, timestamp: Math.floor(Date.now() / 1000) - 3600,
  });
  // The SDK itself rejects it too (same 300 s default tolerance).
  assert.throws(() => stripe.webhooks.constructEvent(payload, header, SECRET), /tolerance/i);
  const r = await send(payload, header);
  assert.equal(r.status, 401, r.text);
  assert.deepEqual(r.json, { error: 'timestamp outside tolerance' });
  assert.equal(d.rows().filter((row) => row.event_id === 'evt_1InteropOldTimestamp').length, 0);
});

test('a body changed after signing is refused with 401', async () => {
  const payload = stripeEvent('evt_1InteropTampered');
  const header = stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET });
  const r = await send(payload.replace('4200', '4201'), header);
  assert.equal(r.status, 401, r.text);
  assert.equal(d.rows().filter((row) => row.event_id === 'evt_1InteropTampered').length, 0);
});
