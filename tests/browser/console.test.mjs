// The console (src/console/) as a person meets it: Debian's headless Chromium, driven by
// puppeteer-core, against the real daemon. GitHub deliveries signed by GitHub's own library
// (@octokit/webhooks-methods) go in; the test opens the list, follows a link to an event,
// presses Retry on a dead event and Clear on another (confirming each), and checks the effect
// with the CLI. An event whose id, headers and body carry <script> and onerror= payloads must
// show as text and run nothing; the 403s (no CSRF token, foreign Origin, foreign Host) must
// change nothing.
//
// HOOKBOX_SCREENSHOTS=DIR also saves the list and an event page as PNGs (README's pictures).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { sign } from '@octokit/webhooks-methods';
import puppeteer from 'puppeteer-core';

const here = dirname(fileURLToPath(import.meta.url));
const HOOKBOX_BIN = process.env.HOOKBOX_BIN
  ? resolve(process.env.HOOKBOX_BIN)
  : resolve(here, '../../build/hookbox');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SECRET = 'browser-test-secret';

const dir = mkdtempSync(join(tmpdir(), 'hookbox-browser-'));
const config = join(dir, 'config.yaml');
let daemon;
let port;
let adminPort;
let browser;
const dialogs = [];

// The daemon: one GitHub endpoint whose handler fails until the file `ok` exists, so that
// each event's job dies at its first failure until the test says otherwise.
async function startDaemon() {
  writeFileSync(config, [
    'listen: 127.0.0.1:0',
    'admin_listen: 127.0.0.1:0',
    `database: ${JSON.stringify(join(dir, 'inbox.db'))}`,
    'workers: 2',
    'endpoints:',
    '  - name: github',
    '    path: /hooks/github',
    '    provider: github',
    `    secrets: [{value: ${SECRET}}]`,
    '    retry: {max_attempts: 1}',
    '    routes:',
    '      - events: ["*"]',
    '        handlers:',
    `          - exec: {command: [/bin/sh, -c, 'test -e ${join(dir, 'ok')}']}`,
    '',
  ].join('\n'));
  daemon = spawn(HOOKBOX_BIN, ['serve', '-c', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  const lines = createInterface({ input: daemon.stderr });
  await new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error('hookbox did not start')), 20_000);
    daemon.once('exit', (code) => rej(new Error(`hookbox exited at start: ${code}`)));
    lines.on('line', (line) => {
      let j;
      try { j = JSON.parse(line); } catch { return; }
      if (j.msg === 'listening') {
        port = Number(j.listen.split(':').pop());
        adminPort = Number(j.admin.split(':').pop());
        clearTimeout(timer);
        res();
      }
    });
  });
}

async function deliver(id, event, body) {
  const text = JSON.stringify(body);
  const res = await fetch(`http://127.0.0.1:${port}/hooks/github`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-delivery': id,
      'x-github-event': event,
      'x-hub-signature-256': await sign(SECRET, text),
    },
    body: text,
  });
  assert.equal(res.status, 200, await res.text());
}

// `hookbox inbox show github ID --json`, or null when there is no such event.
function show(id) {
  try {
    return JSON.parse(execFileSync(HOOKBOX_BIN, ['inbox', 'show', 'github', id, '--json', '-c', config],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
  } catch (e) {
    if (e.status === 1) return null;
    throw e;
  }
}

async function until(what, check) {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`timed out waiting for ${what}`);
}

const admin = (path) => `http://127.0.0.1:${adminPort}${path}`;

async function newPage() {
  const page = await browser.newPage();
  page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });
  await page.setViewport({ width: 1280, height: 900 });
  return page;
}

// Clicks the link or button whose text is exactly `text` and waits for the next page.
async function clickText(page, selector, text) {
  const handles = await page.$$(selector);
  for (const h of handles) {
    if ((await h.evaluate((e) => e.textContent.trim())) === text) {
      await Promise.all([page.waitForNavigation(), h.click()]);
      return;
    }
  }
  assert.fail(`no ${selector} "${text}" on ${page.url()}`);
}

const HOSTILE_ID = '<script>alert("id")</script>';
const HOSTILE_TYPE = '<img src=x onerror=alert("type")>';
const HOSTILE_BODY = { note: '</pre><script>alert("body")</script><img src=x onerror=alert(1)>' };

before(async () => {
  await startDaemon();
  await deliver('to-retry', 'push', { ref: 'refs/heads/main', n: 1 });
  await deliver('to-clear', 'issues', { action: 'opened', n: 2 });
  await deliver(HOSTILE_ID, HOSTILE_TYPE, HOSTILE_BODY);
  for (const id of ['to-retry', 'to-clear', HOSTILE_ID]) {
    await until(`${id} dead`, () => show(id)?.status === 'dead');
  }
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
});

after(async () => {
  await browser?.close();
  daemon?.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

test('the list links to each event; Retry re-runs a dead event after a confirmation', async () => {
  const page = await newPage();
  const res = await page.goto(admin('/'));
  assert.equal(res.status(), 200);
  assert.match(await page.$eval('.summary', (e) => e.textContent), /3\s+dead jobs/);
  if (process.env.HOOKBOX_SCREENSHOTS) {
    await page.screenshot({ path: join(process.env.HOOKBOX_SCREENSHOTS, 'console-list.png') });
  }
  await clickText(page, 'td.id a', 'to-retry');
  assert.match(page.url(), /\/event\?endpoint=github&id=to-retry$/);
  assert.equal(await page.$eval('h1', (e) => e.textContent), 'Event to-retry');
  if (process.env.HOOKBOX_SCREENSHOTS) {
    await page.screenshot({ path: join(process.env.HOOKBOX_SCREENSHOTS, 'console-event.png'),
      fullPage: true });
  }
  await clickText(page, 'button', 'Retry');
  assert.match(await page.$eval('h1', (e) => e.textContent), /Retry this event\?/);
  assert.equal(show('to-retry').status, 'dead');  // nothing yet
  writeFileSync(join(dir, 'ok'), '');  // the handler succeeds from now on
  await clickText(page, 'button', 'Retry');
  assert.match(await page.$eval('.notice', (e) => e.textContent), /Re-armed 1 dead job/);
  await until('to-retry processed', () => show('to-retry')?.status === 'processed');
  assert.equal(show('to-retry').jobs[0].attempts.length, 2);
  await page.close();
});

test('Clear forgets an event after a confirmation; the redelivery is new', async () => {
  const page = await newPage();
  await page.goto(admin('/event?endpoint=github&id=to-clear'));
  await clickText(page, 'button', 'Clear');
  assert.match(await page.$eval('main', (e) => e.textContent), /next delivery of it is accepted/);
  assert.notEqual(show('to-clear'), null);
  await clickText(page, 'button', 'Clear');
  assert.match(await page.$eval('.notice', (e) => e.textContent),
    /Cleared github to-clear: the next delivery of this event will be processed as new/);
  assert.equal(show('to-clear'), null);
  await deliver('to-clear', 'issues', { action: 'opened', n: 2 });
  await until('to-clear processed again', () => show('to-clear')?.status === 'processed');
  await page.close();
});

test('an event carrying <script> and onerror= shows them as text and runs nothing', async () => {
  const page = await newPage();
  const blocked = [];
  page.on('console', (m) => blocked.push(m.text()));
  await page.goto(admin('/'));
  const idText = await page.$$eval('td.id a', (as) => as.map((a) => a.textContent));
  assert.ok(idText.includes(HOSTILE_ID), idText.join(', '));
  await clickText(page, 'td.id a', HOSTILE_ID);
  const shown = await page.evaluate(() => ({
    scripts: document.querySelectorAll('script').length,
    images: document.querySelectorAll('img').length,
    handlers: [...document.querySelectorAll('*')].filter(
      (e) => [...e.attributes].some((a) => a.name.startsWith('on'))).length,
    h1: document.querySelector('h1').textContent,
    body: document.querySelector('pre.body').textContent,
    text: document.body.textContent,
  }));
  assert.equal(shown.scripts, 0);
  assert.equal(shown.images, 0);
  assert.equal(shown.handlers, 0);
  assert.equal(shown.h1, `Event ${HOSTILE_ID}`);
  assert.ok(shown.body.includes(JSON.stringify(HOSTILE_BODY.note)), shown.body);
  assert.ok(shown.text.includes(HOSTILE_TYPE));  // the forged type, in the headers and fields
  assert.deepEqual(dialogs, []);  // no alert() ran, on any page
  await page.close();
});

test('refused: no CSRF token, a foreign Origin, a foreign Host; nothing changes', async () => {
  const page = await newPage();
  await page.goto(admin(`/event?endpoint=github&id=${encodeURIComponent(HOSTILE_ID)}`));
  const csrf = await page.$eval('input[name=csrf]', (e) => e.value);
  await page.close();
  const form = (fields) => new URLSearchParams({ endpoint: 'github', id: HOSTILE_ID, confirm: 'yes',
    ...fields }).toString();
  const post = (body, headers = {}) => fetch(admin('/event/clear'), {
    method: 'POST', redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body,
  });
  assert.equal((await post(form({}))).status, 403);
  assert.equal((await post(form({ csrf: 'f'.repeat(64) }))).status, 403);
  assert.equal((await post(form({ csrf }), { origin: 'http://evil.example' })).status, 403);
  // A page of another site that posts the form (what a CSRF attack is), in the browser.
  const evil = await newPage();
  await evil.setContent(`<form method="post" action="${admin('/event/clear')}">
    <input name="endpoint" value="github"><input name="id" value="${HOSTILE_ID.replace(/"/g, '&quot;')}">
    <input name="csrf" value="${csrf}"><input name="confirm" value="yes"><button>go</button></form>`);
  const [answer] = await Promise.all([evil.waitForNavigation(), evil.click('button')]);
  assert.equal(answer.status(), 403);
  await evil.close();
  // DNS rebinding: the same listener reached under a foreign name. (fetch may not set Host,
  // so a raw request.)
  const { request } = await import('node:http');
  const status = await new Promise((res, rej) => {
    const r = request({ host: '127.0.0.1', port: adminPort, path: '/', headers: { host: `rebind.example:${adminPort}` } },
      (m) => { m.resume(); res(m.statusCode); });
    r.on('error', rej);
    r.end();
  });
  assert.equal(status, 403);
  assert.equal(show(HOSTILE_ID).status, 'dead');  // still there, unchanged
  // The same form from the console's own page is accepted.
  assert.equal((await post(form({ csrf }), { origin: `http://127.0.0.1:${adminPort}` })).status, 303);
  assert.equal(show(HOSTILE_ID), null);
});

// `hookbox handler list --json`: the one handler's state.
function handlerState() {
  return JSON.parse(execFileSync(HOOKBOX_BIN, ['handler', 'list', '--json', '-c', config],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }))[0];
}

test('Handlers: Pause and Resume each after a confirmation, with a reason', async () => {
  const page = await newPage();
  const res = await page.goto(admin('/handlers'));
  assert.equal(res.status(), 200);
  assert.equal(handlerState().state, 'running');
  await clickText(page, 'button', 'Pause');
  assert.match(await page.$eval('h1', (e) => e.textContent), /Pause this handler\?/);
  assert.equal(handlerState().state, 'running');  // nothing yet
  await page.type('input[name=reason]', 'downstream <b>down</b>');
  await clickText(page, 'button', 'Pause');
  assert.match(await page.$eval('.notice', (e) => e.textContent), /Paused github/);
  assert.equal(handlerState().state, 'paused');
  assert.equal(handlerState().reason, 'downstream <b>down</b>');
  assert.match(await page.$eval('main', (e) => e.textContent), /downstream <b>down<\/b>/);  // as text
  await clickText(page, 'button', 'Resume');
  assert.match(await page.$eval('h1', (e) => e.textContent), /Resume this handler\?/);
  await clickText(page, 'button', 'Resume');
  assert.match(await page.$eval('.notice', (e) => e.textContent), /Resumed github/);
  assert.equal(handlerState().state, 'running');
  await page.close();
});

test('the bulk page shows the plan of a retry; its button re-arms every dead job', async () => {
  rmSync(join(dir, 'ok'), { force: true });  // the handler fails again: these jobs die
  for (const id of ['bulk-1', 'bulk-2']) await deliver(id, 'push', { ref: 'refs/heads/main', id });
  for (const id of ['bulk-1', 'bulk-2']) await until(`${id} dead`, () => show(id)?.status === 'dead');
  const page = await newPage();
  await page.goto(admin('/'));
  await clickText(page, 'nav a', 'Bulk');
  await page.select('select[name=endpoint]', 'github');
  await page.select('select[name=status]', 'dead');
  // A body field, as `--where` takes it: both events' ref.
  await page.type('textarea[name=where]', '/ref=refs/heads/main');
  await clickText(page, 'button', 'Plan');
  assert.match(page.url(), /\/bulk\?verb=retry&endpoint=github&status=dead&/);
  assert.match(page.url(), /where=%2Fref%3Drefs%2Fheads%2Fmain/);
  // The confirming form carries the filter.
  assert.equal(await page.$eval('form[method=post] input[name=where]', (e) => e.value),
    '/ref=refs/heads/main');
  // The plan: the same numbers as the CLI's --dry-run, and nothing changed yet.
  assert.equal(await page.$eval('#plan-rows', (e) => e.textContent), '2');
  assert.equal(await page.$eval('#plan-jobs', (e) => e.textContent), '2');
  const dry = JSON.parse(execFileSync(HOOKBOX_BIN, ['inbox', 'retry', '--dead', '--endpoint', 'github',
    '--dry-run', '--json', '-c', config], { encoding: 'utf8' }));
  assert.equal(dry.plan.jobs, 2);
  assert.equal(show('bulk-1').status, 'dead');

  // Another site's page posting the same form (with the token, even) is refused.
  const csrf = await page.$eval('input[name=csrf]', (e) => e.value);
  const evil = await newPage();
  await evil.setContent(`<form method="post" action="${admin('/bulk')}">
    <input name="verb" value="retry"><input name="endpoint" value="github">
    <input name="csrf" value="${csrf}"><button>go</button></form>`);
  const [refused] = await Promise.all([evil.waitForNavigation(), evil.click('button')]);
  assert.equal(refused.status(), 403);
  await evil.close();
  const noToken = await fetch(admin('/bulk'), {
    method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'verb=retry&endpoint=github',
  });
  assert.equal(noToken.status, 403);
  assert.equal(show('bulk-1').status, 'dead');

  writeFileSync(join(dir, 'ok'), '');  // the downstream is back
  await clickText(page, 'button#bulk-confirm', 'Retry 2 job(s)');
  assert.match(await page.$eval('.notice', (e) => e.textContent), /Re-armed 2 job\(s\)/);
  for (const id of ['bulk-1', 'bulk-2']) {
    await until(`${id} processed`, () => show(id)?.status === 'processed');
  }
  assert.equal(show('bulk-2').jobs[0].attempts.length, 2);
  await page.close();
});
