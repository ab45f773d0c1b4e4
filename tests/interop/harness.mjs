// Shared harness for the interop tests (not a test file itself: its name matches none of
// node --test's patterns). It gives each test file its own hermetic hookbox: a temp dir, a
// config with inline secrets, the real `hookbox serve` on 127.0.0.1:0 (the port is read from
// its "listening" JSON log line on stderr), HTTP to it with global fetch, and the real CLI
// (`inbox list/show --json`) run against its database. Nothing is mocked.
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

// $HOOKBOX_BIN, else the default build dir of this checkout.
export const HOOKBOX_BIN = process.env.HOOKBOX_BIN
  ? resolve(process.env.HOOKBOX_BIN)
  : resolve(here, '../../build/hookbox');

const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 10_000;

// Every daemon still running when the process exits (a test threw before `after` ran) dies.
const running = new Set();
process.on('exit', () => {
  for (const child of running) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
});

export class Daemon {
  // endpointsYaml: the YAML list under `endpoints:`, already indented by two spaces.
  // options.top: more top-level YAML lines (e.g. `tracing:`); options.workers: the worker
  // count (0, the default, leaves jobs `pending`).
  constructor(endpointsYaml, options = {}) {
    this.dir = mkdtempSync(join(tmpdir(), 'hookbox-interop-'));
    this.config = join(this.dir, 'config.yaml');
    this.log = [];
    writeFileSync(this.config, [
      '# written by tests/interop/harness.mjs',
      'listen: 127.0.0.1:0',
      'admin_listen: 127.0.0.1:0',
      `database: ${JSON.stringify(join(this.dir, 'inbox.db'))}`,
      'limits: {max_body: 1MiB, read_timeout: 5s, threads: 4}',
      // No workers unless asked: jobs stay `pending`, so stored rows are deterministic.
      `workers: ${options.workers ?? 0}`,
      ...(options.top ? [options.top.replace(/\s+$/, '')] : []),
      'endpoints:',
      endpointsYaml.replace(/\s+$/, ''),
      '',
    ].join('\n'));
  }

  async start() {
    const child = spawn(HOOKBOX_BIN, ['serve', '-c', this.config], {
      cwd: this.dir,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child = child;
    running.add(child);
    this.exited = new Promise((res) => child.once('exit', (code, signal) => {
      running.delete(child);
      res({ code, signal });
    }));
    const lines = createInterface({ input: child.stderr });
    await new Promise((res, rej) => {
      const fail = (why) => {
        clearTimeout(timer);
        rej(new Error(`hookbox serve ${why}\nconfig:\n${this.configText()}\nlog:\n${this.log.join('\n')}`));
      };
      const timer = setTimeout(() => { child.kill('SIGKILL'); fail('did not start in time'); },
        START_TIMEOUT_MS);
      const onError = (e) => fail(`could not be spawned (${HOOKBOX_BIN}): ${e.message}`);
      const onExit = (code, signal) => fail(`exited at start (code ${code}, signal ${signal})`);
      child.once('error', onError);
      child.once('exit', onExit);
      lines.on('line', (line) => {
        this.log.push(line);
        let j;
        try { j = JSON.parse(line); } catch { return; }
        if (j && j.msg === 'listening' && this.port === undefined) {
          this.port = Number(String(j.listen).slice(String(j.listen).lastIndexOf(':') + 1));
          if (j.admin) this.adminPort = Number(String(j.admin).slice(String(j.admin).lastIndexOf(':') + 1));
          clearTimeout(timer);
          child.off('exit', onExit);
          child.off('error', onError);
          res();
        }
      });
    });
    return this;
  }

  configText() {
    try { return readFileSync(this.config, 'utf8'); } catch { return '?'; }
  }

  url(path) { return `http://127.0.0.1:${this.port}${path}`; }

  // One sample of the admin port's /metrics: the value of the series `name{labels}`, written
  // as Prometheus prints it (`hookbox_spans_dropped_total{reason="export_failed"}`); 0 when
  // absent.
  async metric(series) {
    const text = await (await fetch(`http://127.0.0.1:${this.adminPort}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(series + ' '));
    return line === undefined ? 0 : Number(line.slice(series.length + 1));
  }

  // POSTs the exact bytes of `body` (string or Buffer). Returns {status, json, text}.
  // The daemon closes a keep-alive connection idle for its Keep-Alive timeout (5 s), and
  // fetch drops pooled connections a second before that, on a timer of the event loop. The
  // CLI calls here (execFileSync) block that loop: after a few seconds of them (ASan builds),
  // the next fetch takes a pooled connection the daemon has already closed, before the loop
  // has seen the close, and fails with UND_ERR_SOCKET "other side closed" before sending a
  // byte the daemon read. Only that failure is sent again, on a new connection.
  async post(path, headers, body) {
    const init = {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8'),
    };
    let res;
    try {
      res = await fetch(this.url(path), init);
    } catch (e) {
      if (e?.cause?.code !== 'UND_ERR_SOCKET') throw e;
      res = await fetch(this.url(path), init);
    }
    const text = await res.text();
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    return { status: res.status, json, text, headers: res.headers };
  }

  // Runs `hookbox ARGS... -c CONFIG` (no shell); returns stdout, throws with stderr on failure.
  cli(args) {
    try {
      return execFileSync(HOOKBOX_BIN, [...args, '-c', this.config], {
        cwd: this.dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
        maxBuffer: 256 * 1024 * 1024,
      });
    } catch (e) {
      throw new Error(`hookbox ${args.join(' ')} failed (status ${e.status}): ${e.stderr}`);
    }
  }

  // `inbox list --json`: an array of rows keyed by inbox column names (no body).
  rows(endpoint) {
    const args = ['inbox', 'list', '--json', '--limit', '100000'];
    if (endpoint) args.push('--endpoint', endpoint);
    return JSON.parse(this.cli(args));
  }

  // `inbox show EP ID --json`: one row plus body and jobs.
  show(endpoint, eventId) {
    return JSON.parse(this.cli(['inbox', 'show', endpoint, eventId, '--json']));
  }

  // One header of a stored event as it arrived (names compared case-insensitively).
  storedHeader(endpoint, eventId, name) {
    const { headers } = this.show(endpoint, eventId);
    const key = Object.keys(headers).find((k) => k.toLowerCase() === name.toLowerCase());
    return key === undefined ? undefined : headers[key];
  }

  // SIGTERM (drain), SIGKILL after a grace period; removes the temp dir. Returns how it exited.
  async stop() {
    let how = { code: null, signal: null };
    if (this.child && this.child.pid !== undefined && this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      how = await this.exited;
      clearTimeout(timer);
    } else if (this.child && this.child.pid !== undefined) {
      how = await this.exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
    return how;
  }
}

export async function startDaemon(endpointsYaml, options = {}) {
  const d = new Daemon(endpointsYaml, options);
  try {
    return await d.start();
  } catch (e) {
    await d.stop();
    throw e;
  }
}

// One daemon for a test file: started before its first test, stopped after its last, which
// must drain and exit 0 on SIGTERM. The returned object stands for the daemon (d.post, d.rows…)
// once it has started.
export function daemonForTests(endpointsYaml) {
  let daemon;
  before(async () => {
    daemon = await startDaemon(endpointsYaml);
  });
  after(async () => {
    const how = await daemon?.stop();
    assert.deepEqual(how, { code: 0, signal: null }, 'hookbox should drain and exit 0 on SIGTERM');
  });
  return new Proxy({}, {
    get(_, key) {
      const value = daemon[key];
      return typeof value === 'function' ? value.bind(daemon) : value;
    },
  });
}
