// tracing.otlp against a real OTLP receiver (otlp_receiver.mjs: the OpenTelemetry project's
// protobuf definitions decode every body): hookbox exports a `receive` span for each
// delivery, an `accept` span for each inbox transaction and an `attempt` span for each
// handler attempt, in the event's trace, linked parent to child, with the span id the http
// handler received in its traceparent. A collector that is down or refuses costs the
// deliveries nothing; the spans are dropped and counted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { startDaemon } from './harness.mjs';
import { OtlpReceiver } from './otlp_receiver.mjs';

const SECRET = 'whsec_' + Buffer.from('hookbox interop: tracing key 000001').toString('base64');
const wh = new Webhook(SECRET);

// The handler's end: a real HTTP service that records each request's traceparent.
const handled = [];
const service = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    handled.push({ id: event.data.id.replace(/^ord_/, ''), traceparent: req.headers.traceparent });
    // An order.failed event fails, for the error status of its attempt span.
    res.writeHead(event.type === 'order.failed' ? 500 : 200).end('ok');
  });
});

let collector;
let d;

before(async () => {
  await new Promise((res) => service.listen(0, '127.0.0.1', res));
  collector = await new OtlpReceiver().start();
  d = await startDaemon(`
  - name: std
    path: /hooks/standard
    provider: standard
    secrets: [{value: "${SECRET}"}]
    retry: {max_attempts: 1}
    routes:
      - events: ["order.*"]
        handlers: [{name: orders, http: {url: "http://127.0.0.1:${service.address().port}/orders"}}]
`, {
    workers: 1,
    // No path: hookbox adds OTLP/HTTP's /v1/traces.
    top: `tracing: {otlp: "${collector.url}", service_name: hookbox-interop}`,
  });
});

after(async () => {
  const how = await d?.stop();
  await collector?.stop();
  service.close();
  assert.deepEqual(how, { code: 0, signal: null }, 'hookbox should drain and exit 0 on SIGTERM');
});

async function send(msgId, type, headers = {}, secret = wh) {
  const payload = JSON.stringify({ type, data: { id: `ord_${msgId}` } });
  const date = new Date();
  return d.post('/hooks/standard', {
    'webhook-id': msgId,
    'webhook-timestamp': String(Math.floor(date.getTime() / 1000)),
    'webhook-signature': secret.sign(msgId, date, payload),
    ...headers,
  }, payload);
}

const byName = (spans, name, eventId) =>
  spans.filter((s) => s.name === name && (eventId === undefined || s.attrs['hookbox.event_id'] === eventId));

test('a producer\'s trace: receive, accept and attempt spans, linked, the handler\'s parent exported', async () => {
  const producerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
  const producerSpan = '00f067aa0ba902b7';
  const r = await send('msg_trace_1', 'order.created', { traceparent: `00-${producerTrace}-${producerSpan}-01` });
  assert.equal(r.status, 200);
  const spans = await collector.until((s) => byName(s, 'attempt orders', 'msg_trace_1').length === 1);
  assert.deepEqual(collector.rejected, []);

  const [receive] = byName(spans, 'receive', 'msg_trace_1');
  const [accept] = byName(spans, 'accept', 'msg_trace_1');
  const [attempt] = byName(spans, 'attempt orders', 'msg_trace_1');
  for (const s of [receive, accept, attempt]) assert.equal(s.traceId, producerTrace);
  assert.equal(receive.parentSpanId, producerSpan);
  assert.equal(receive.kind, 2); // SERVER
  assert.equal(receive.attrs['http.response.status_code'], 200);
  assert.equal(receive.attrs['hookbox.outcome'], 'accepted');
  assert.equal(receive.attrs['hookbox.endpoint'], 'std');
  assert.equal(receive.attrs['url.path'], '/hooks/standard');
  assert.equal(accept.parentSpanId, receive.spanId);
  assert.equal(accept.kind, 1); // INTERNAL
  assert.equal(accept.attrs['hookbox.verdict'], 'accepted');
  assert.equal(attempt.parentSpanId, accept.spanId);
  assert.equal(attempt.kind, 3); // CLIENT
  assert.equal(attempt.attrs['hookbox.handler'], 'orders');
  assert.equal(attempt.attrs['hookbox.outcome'], 'ok');
  assert.equal(attempt.status?.code ?? 0, 0);
  // The handler was given the attempt's span as its parent.
  const got = handled.find((h) => h.id === 'msg_trace_1');
  assert.equal(got.traceparent, `00-${producerTrace}-${attempt.spanId}-01`);
  // Times: nanoseconds since the epoch, each span within its parent.
  for (const s of [receive, accept, attempt]) {
    assert.match(s.startTimeUnixNano, /^\d{19}$/);
    assert.ok(BigInt(s.startTimeUnixNano) <= BigInt(s.endTimeUnixNano));
  }
  assert.ok(BigInt(receive.startTimeUnixNano) <= BigInt(accept.startTimeUnixNano));
  assert.ok(BigInt(accept.endTimeUnixNano) <= BigInt(receive.endTimeUnixNano));
  assert.equal(receive.resource['service.name'], 'hookbox-interop');
  assert.match(String(receive.resource['service.version']), /\d/);
  assert.equal(receive.scope.name, 'hookbox');
});

test('no traceparent: hookbox\'s trace, the one inbox show names; a duplicate gets spans of its own', async () => {
  assert.equal((await send('msg_trace_2', 'order.paid')).status, 200);
  assert.equal((await send('msg_trace_2', 'order.paid')).status, 200);
  const spans = await collector.until((s) => byName(s, 'attempt orders', 'msg_trace_2').length === 1 &&
    byName(s, 'receive', 'msg_trace_2').length === 2);
  const shown = d.show('std', 'msg_trace_2');
  const receives = byName(spans, 'receive', 'msg_trace_2');
  const accepts = byName(spans, 'accept', 'msg_trace_2');
  const [attempt] = byName(spans, 'attempt orders', 'msg_trace_2');
  for (const s of [...receives, ...accepts, attempt]) assert.equal(s.traceId, shown.trace_id);
  for (const r of receives) assert.equal(r.parentSpanId, undefined); // hookbox's trace starts here
  assert.deepEqual(receives.map((r) => r.attrs['hookbox.outcome']).sort(), ['accepted', 'duplicate']);
  const stored = accepts.find((a) => a.attrs['hookbox.verdict'] === 'accepted');
  const dup = accepts.find((a) => a.attrs['hookbox.verdict'] === 'duplicate');
  assert.ok(stored && dup);
  assert.notEqual(stored.spanId, dup.spanId);
  assert.equal(attempt.parentSpanId, stored.spanId);
});

test('a failed attempt is an error span; a refused delivery has its receive span alone', async () => {
  assert.equal((await send('msg_trace_3', 'order.failed')).status, 200);
  const other = new Webhook('whsec_' + Buffer.from('not the configured secret 00001').toString('base64'));
  const producerTrace = '0af7651916cd43dd8448eb211c80319c';
  const refused = await send('msg_trace_4', 'order.created',
    { traceparent: `00-${producerTrace}-b7ad6b7169203331-01` }, other);
  assert.equal(refused.status, 401);
  const spans = await collector.until((s) => byName(s, 'attempt orders', 'msg_trace_3').length === 1 &&
    s.some((x) => x.traceId === producerTrace));
  const [failed] = byName(spans, 'attempt orders', 'msg_trace_3');
  assert.equal(failed.status.code, 2); // ERROR
  assert.match(failed.status.message, /500/);
  assert.equal(failed.attrs['hookbox.next'], 'dead');
  const ofRefused = spans.filter((s) => s.traceId === producerTrace);
  assert.equal(ofRefused.length, 1);
  assert.equal(ofRefused[0].name, 'receive');
  assert.equal(ofRefused[0].attrs['http.response.status_code'], 401);
  assert.equal(ofRefused[0].attrs['hookbox.outcome'], 'unauthenticated');
  assert.equal(ofRefused[0].parentSpanId, 'b7ad6b7169203331');
});

test('a producer that does not sample: no spans of its trace', async () => {
  const unsampled = 'aaaabbbbccccddddeeeeffff00001111';
  assert.equal((await send('msg_trace_5', 'order.created',
    { traceparent: `00-${unsampled}-1111222233334444-00` })).status, 200);
  // A later, sampled event's spans come after the unsampled one's would have.
  assert.equal((await send('msg_trace_6', 'order.created')).status, 200);
  const spans = await collector.until((s) => byName(s, 'attempt orders', 'msg_trace_6').length === 1);
  await collector.until(() => handled.some((h) => h.id === 'msg_trace_5'));
  assert.equal(spans.filter((s) => s.traceId === unsampled).length, 0);
  // The handler still got the producer's trace, flags and all.
  assert.match(handled.find((h) => h.id === 'msg_trace_5').traceparent, new RegExp(`^00-${unsampled}-[0-9a-f]{16}-00$`));
});

test('a collector that refuses: deliveries go on, spans are dropped and counted', async () => {
  const exported = await d.metric('hookbox_spans_exported_total');
  assert.ok(exported >= 9, `exported ${exported}`);
  const droppedBefore = await d.metric('hookbox_spans_dropped_total{reason="export_failed"}');
  collector.answer = 503;
  const requestsBefore = collector.requests;
  for (let i = 0; i < 5; i += 1) assert.equal((await send(`msg_down_${i}`, 'order.created')).status, 200);
  // Batches go out at least each second: wait for one to be refused and counted.
  const end = Date.now() + 15_000;
  while (await d.metric('hookbox_spans_dropped_total{reason="export_failed"}') === droppedBefore) {
    assert.ok(Date.now() < end, 'no span was counted as dropped');
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(collector.requests > requestsBefore);
  assert.equal(byName(collector.spans, 'receive').filter((s) => s.attrs['hookbox.event_id']?.startsWith('msg_down_')).length, 0);
  assert.ok(d.log.some((l) => l.includes('spans dropped')), 'one warning says the collector refused');
  // Back up: the next spans are taken again.
  collector.answer = 200;
  assert.equal((await send('msg_back', 'order.created')).status, 200);
  await collector.until((s) => byName(s, 'receive', 'msg_back').length === 1);
});

test('the receiver itself refuses what is no ExportTraceServiceRequest', async () => {
  const span = {
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', name: 'x', kind: 1,
    startTimeUnixNano: '1', endTimeUnixNano: '2',
  };
  const post = (body) => fetch(`${collector.url}/v1/traces`,
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const wrap = (s) => ({ resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ spans: [s] }] }] });
  assert.equal((await post(wrap(span))).status, 200);
  assert.equal((await post(wrap({ ...span, spanID: span.spanId }))).status, 400);       // no such field
  assert.equal((await post(wrap({ ...span, traceId: span.traceId.slice(2) }))).status, 400); // short id
  assert.equal((await post(wrap({ ...span, startTimeUnixNano: 'soon' }))).status, 400);    // no number
  collector.rejected.length = 0;
  collector.spans = collector.spans.filter((s) => s.name !== 'x');
});
