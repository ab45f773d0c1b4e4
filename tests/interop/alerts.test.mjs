// `hookbox alerts test NAME` against a real receiver that verifies each POST with the
// Standard Webhooks reference library (`standardwebhooks`): the sample alert is signed with
// the alert's key (webhook-id = the alert's event id), its body is the alert's JSON, and a
// target that refuses it, or a name no alert has, is exit 1 with a clear line. Then each
// stored condition raised by a real daemon: job_dead, circuit_open, handler_held, backlog
// (storage_unavailable, sent while storage fails, is in integration/storage_fault_test.cc).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { Daemon, HOOKBOX_BIN, startDaemon } from './harness.mjs';

const KEY = 'whsec_' + Buffer.from('hookbox interop: the alerts key 0001').toString('base64');
const wh = new Webhook(KEY);

const received = [];
let answer = 200;
const target = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    let verified;
    try {
      verified = wh.verify(body, req.headers);
    } catch (e) {
      verified = { error: e.message };
    }
    received.push({ path: req.url, headers: req.headers, body, verified });
    // /down is a handler's downstream that always fails; the alerts' target answers `answer`.
    res.writeHead(req.url === '/down' ? 500 : answer).end();
  });
});

let d;
before(async () => {
  await new Promise((res) => target.listen(0, '127.0.0.1', res));
  const url = `http://127.0.0.1:${target.address().port}/alerts`;
  d = new Daemon(`
  - name: shop
    path: /hooks/shop
    verify: none
`, {
    top: `alerts:
  - name: ops
    on: [job_dead, circuit_open]
    http: {url: "${url}", secret: {value: "${KEY}"}}
  - name: unsigned
    on: [handler_held]
    http: {url: "${url}"}`,
  });
});

after(async () => {
  await d.stop();
  target.close();
});

// The CLI run asynchronously: the target above answers from this process's event loop.
async function alertsTest(name) {
  try {
    const { stdout } = await promisify(execFile)(HOOKBOX_BIN, ['alerts', 'test', name, '-c', d.config]);
    return { status: 0, out: stdout };
  } catch (e) {
    return { status: e.code, out: e.stdout, err: e.stderr };
  }
}

test('alerts test: a sample alert, signed with the alert\'s key, verified by standardwebhooks', async () => {
  const r = await alertsTest('ops');
  assert.equal(r.status, 0, r.err);
  assert.match(r.out, /^alert ops: sent test:ops:\d+/);
  assert.equal(received.length, 1);
  const got = received[0];
  assert.equal(got.path, '/alerts');
  assert.ok(!got.verified.error, `standardwebhooks refused it: ${got.verified.error}`);
  assert.equal(got.headers['webhook-id'], r.out.match(/sent (\S+)/)[1]);
  const alert = JSON.parse(got.body);
  assert.deepEqual(got.verified, alert);
  assert.equal(alert.alert, 'test');
  assert.equal(alert.name, 'ops');
  assert.deepEqual(alert.conditions, ['job_dead', 'circuit_open']);
  assert.match(alert.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
  assert.match(alert.detail, /hookbox alerts test ops/);
  assert.equal(got.headers['x-hookbox-endpoint'], 'hookbox.alerts');
  assert.equal(got.headers['x-hookbox-event-type'], 'test');
  assert.match(got.headers.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  // Each test is a new alert: a target that dedupes by webhook-id takes the next one too.
  assert.equal((await alertsTest('ops')).status, 0);
  assert.notEqual(received[1].headers['webhook-id'], got.headers['webhook-id']);
});

test('alerts test: an alert without a key is sent unsigned', async () => {
  const before = received.length;
  assert.equal((await alertsTest('unsigned')).status, 0);
  const got = received[before];
  assert.equal(got.headers['webhook-signature'], undefined);
  assert.equal(JSON.parse(got.body).name, 'unsigned');
});

test('alerts test: a target that refuses, and a name no alert has, are exit 1', async () => {
  answer = 503;
  const refused = await alertsTest('ops');
  answer = 200;
  assert.equal(refused.status, 1);
  assert.match(refused.out, /^alert ops: not sent: failed: .*503/);
  const unknown = await alertsTest('opps');
  assert.equal(unknown.status, 1);
  assert.match(unknown.err, /no alert named "opps" in .*config\.yaml \(its alerts: ops unsigned\)/);
});

// The endpoint the raising tests deliver to: `shop`, ids from the body, `extra` endpoint keys
// and every event to `handlers` (YAML list items, indented for the route).
function shop(handlers, extra = '') {
  return `
  - name: shop
    path: /hooks/shop
    verify: none
    event_id: body:/id${extra}
    routes:
      - events: ["*"]
        handlers:
${handlers}
`;
}

// `shop` with one handler, billing, whose downstream always fails and whose breaker opens
// after two failures for an hour: the events after those wait, due.
function brokenBilling(url) {
  return shop(`          - {name: billing, http: {url: "${url}/down", circuit: {failures: 2, cooldown: 1h}}}`);
}

// Polls `pred` every 100 ms until it holds or `ms` passed; what it last returned.
async function waitUntil(pred, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!(await pred()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return pred();
}

test('job_dead: one signed alert per handler and repeat window, stored as an event of hookbox.alerts', async () => {
  const start = received.length;
  const url = `http://127.0.0.1:${target.address().port}`;
  const live = await startDaemon(shop(`          - {name: billing, http: {url: "${url}/down"}}
          - {name: mailer, http: {url: "${url}/down"}}`, '\n    retry: {max_attempts: 1}'), {
    workers: 1,
    top: `alerts:
  - name: ops
    on: [job_dead]
    repeat: 1h
    http: {url: "${url}/alerts", secret: {value: "${KEY}"}}`,
  });
  try {
    // Every handler's POST to /down fails: one attempt, then dead.
    for (const id of ['order-1', 'order-2']) {
      const r = await live.post('/hooks/shop', {}, JSON.stringify({ id, type: 'order.created' }));
      assert.equal(r.status, 200);
    }
    // Four dead jobs (two handlers, two events): one alert per handler in the hour.
    const alerts = () => received.slice(start).filter((x) => x.path === '/alerts');
    await waitUntil(() => alerts().length >= 2);
    await new Promise((r) => setTimeout(r, 500)); // a third alert would be out by now
    const rows = live.rows('hookbox.alerts');
    assert.equal(rows.length, 2, JSON.stringify(rows));
    const handlers = rows.map((row) => JSON.parse(live.show('hookbox.alerts', row.event_id).body).handler).sort();
    assert.deepEqual(handlers, ['billing', 'mailer']);
    for (const got of alerts()) {
      assert.ok(!got.verified.error, `standardwebhooks refused it: ${got.verified.error}`);
      const alert = got.verified;
      assert.equal(alert.alert, 'job_dead');
      assert.equal(alert.name, 'ops');
      assert.equal(alert.endpoint, 'shop');
      assert.match(alert.event_id, /^order-[12]$/);
      assert.equal(alert.attempts, 1);
      assert.match(alert.detail, /500/);
      assert.match(got.headers['webhook-id'], new RegExp(`^ops:job_dead:shop/${alert.handler}:`));
    }
    // Sent alerts are the alert handler's `ok` attempts; no deliveries series for hookbox.alerts.
    assert.equal(await live.metric('hookbox_attempts_total{endpoint="hookbox.alerts",handler="ops",outcome="ok"}'), 2);
    assert.equal(await live.metric('hookbox_attempts_total{endpoint="hookbox.alerts",handler="ops",outcome="failed"}'), 0);
    assert.equal(await live.metric('hookbox_deliveries_total{endpoint="hookbox.alerts",outcome="accepted"}'), 0);
  } finally {
    answer = 200;
    await live.stop();
  }
});

test('circuit_open: the breaker that holds a handler is an alert, once', async () => {
  const start = received.length;
  const url = `http://127.0.0.1:${target.address().port}`;
  const live = await startDaemon(brokenBilling(url), {
    workers: 1,
    top: `alerts:
  - name: pager
    on: [circuit_open]
    http: {url: "${url}/alerts", secret: {value: "${KEY}"}}`,
  });
  try {
    const alerts = () => received.slice(start).filter((x) => x.path === '/alerts');
    for (const id of ['c-1', 'c-2', 'c-3']) {
      assert.equal((await live.post('/hooks/shop', {}, JSON.stringify({ id }))).status, 200);
    }
    await waitUntil(() => alerts().some((x) => x.verified.alert === 'circuit_open'));
    await new Promise((r) => setTimeout(r, 500)); // a second alert would be out by now
    const got = alerts().find((x) => x.verified.alert === 'circuit_open');
    assert.ok(got, `no circuit_open alert; log:\n${live.log.slice(-20).join('\n')}`);
    assert.equal(got.verified.name, 'pager');
    assert.equal(got.verified.handler, 'billing');
    assert.equal(got.verified.failures, 2);
    assert.match(got.verified.detail, /circuit opened after 2 failures/);
    assert.equal(alerts().length, 1);
    assert.equal(live.rows('hookbox.alerts').length, 1);
  } finally {
    answer = 200;
    await live.stop();
  }
});

test('handler_held: a reload that leaves jobs without their handler stores the alert', async () => {
  const url = `http://127.0.0.1:${target.address().port}`;
  const endpoints = (handler) => `
  - name: shop
    path: /hooks/shop
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers: [{name: ${handler}, http: {url: "${url}/orders"}}]
`;
  // workers: 0: the job waits, and so does the alert (stored, as any job is). A day's
  // repeat window: the windows start at whole multiples of it since the epoch, and a
  // 15-minute one (the default) could start between the two reloads (it did, in CI).
  const top = `alerts:
  - name: ops
    on: [handler_held]
    repeat: 24h
    http: {url: "${url}/alerts", secret: {value: "${KEY}"}}`;
  const live = await startDaemon(endpoints('billing'), { top });
  try {
    assert.equal((await live.post('/hooks/shop', {}, JSON.stringify({ id: 'h-1' }))).status, 200);
    assert.deepEqual(live.rows('hookbox.alerts'), []);
    const text = readFileSync(live.config, 'utf8').replace('name: billing,', 'name: billing-v2,');
    writeFileSync(live.config, text);
    const reloaded = live.log.length;
    const day = new Date().toISOString().slice(0, 10);  // the window of both reloads, below
    live.child.kill('SIGHUP');
    await waitUntil(() => live.log.slice(reloaded).some((l) => l.includes('"reloaded"')), 10_000);
    const rows = live.rows('hookbox.alerts');
    assert.equal(rows.length, 1, live.log.slice(reloaded).join('\n'));
    assert.equal(rows[0].event_type, 'handler_held');
    const alert = JSON.parse(live.show('hookbox.alerts', rows[0].event_id).body);
    assert.equal(alert.alert, 'handler_held');
    assert.equal(alert.endpoint, 'shop');
    assert.equal(alert.handler, 'billing');
    assert.equal(alert.jobs, 1);
    assert.equal(alert.when, 'reload');
    // A second reload in the window: the same alert, a duplicate, nothing new to send
    // (two rows only if a UTC day began between the reloads, the next window's alert).
    live.child.kill('SIGHUP');
    await new Promise((r) => setTimeout(r, 1000));
    const crossed = new Date().toISOString().slice(0, 10) !== day;
    assert.equal(live.rows('hookbox.alerts').length, crossed ? 2 : 1);
  } finally {
    await live.stop();
  }
});

test('backlog: a handler whose oldest due job waited backlog_age is one signed alert', async () => {
  const start = received.length;
  const url = `http://127.0.0.1:${target.address().port}`;
  // The breaker opens after the first two events: the third event's job is due and waits.
  const live = await startDaemon(brokenBilling(url), {
    workers: 1,
    top: `alerts:
  - name: ops
    on: [backlog]
    backlog_age: 1s
    repeat: 1h
    http: {url: "${url}/alerts", secret: {value: "${KEY}"}}`,
  });
  try {
    const alerts = () => received.slice(start).filter((x) => x.path === '/alerts');
    for (const id of ['b-1', 'b-2', 'b-3']) {
      assert.equal((await live.post('/hooks/shop', {}, JSON.stringify({ id }))).status, 200);
    }
    await waitUntil(() => alerts().length >= 1);
    await new Promise((r) => setTimeout(r, 2500)); // two more checks: a second alert would be out
    assert.equal(alerts().length, 1, `log:\n${live.log.slice(-20).join('\n')}`);
    const got = alerts()[0];
    assert.ok(!got.verified.error, `standardwebhooks refused it: ${got.verified.error}`);
    const alert = got.verified;
    assert.equal(alert.alert, 'backlog');
    assert.equal(alert.name, 'ops');
    assert.equal(alert.endpoint, 'shop');
    assert.equal(alert.handler, 'billing');
    assert.ok(alert.due >= 1, JSON.stringify(alert));
    assert.ok(alert.waited_seconds >= 1, JSON.stringify(alert));
    assert.equal(alert.backlog_age_seconds, 1);
    assert.match(alert.oldest_due_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.match(alert.detail, /due jobs?, the oldest waiting \d+s \(backlog_age 1s\)/);
    assert.match(got.headers['webhook-id'], /^ops:backlog:shop\/billing:/);
    const rows = live.rows('hookbox.alerts');
    assert.equal(rows.length, 1);
    assert.equal(rows[0].event_type, 'backlog');
  } finally {
    await live.stop();
  }
});
