// An OTLP/HTTP JSON trace receiver for the tracing tests (not a test file itself). It takes
// POST /v1/traces as a collector does and decodes each body with the OpenTelemetry
// project's own protobuf definitions of ExportTraceServiceRequest (the generated code in
// @opentelemetry/otlp-transformer): a body that does not fit them, a field name the schema
// does not have, an id of the wrong length, is answered 400 and kept in `rejected`, so a
// test sees it. OTLP's JSON encoding differs from protobuf's standard JSON mapping in one
// place: trace and span ids are hex, not base64 (opentelemetry-proto, "JSON Protobuf
// Encoding"); they are turned into bytes before the schema reads them.
import { createServer } from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');
const Request = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

const ID_BYTES = { traceId: 16, spanId: 8, parentSpanId: 8 };

// Hex ids to base64 (what protobufjs reads for bytes), in place; throws on a bad one.
function idsToBase64(request) {
  for (const rs of request.resourceSpans ?? []) {
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) {
        for (const [field, bytes] of Object.entries(ID_BYTES)) {
          if (span[field] === undefined) continue;
          const hex = span[field];
          if (typeof hex !== 'string' || !new RegExp(`^[0-9a-f]{${bytes * 2}}$`).test(hex)) {
            throw new Error(`${field} ${JSON.stringify(hex)} is not ${bytes * 2} lowercase hex digits`);
          }
          span[field] = Buffer.from(hex, 'hex').toString('base64');
        }
      }
    }
  }
}

// Every key of `sent` must be a field the schema read back (`read`, with defaults), with the
// same value: a misspelt or invented field would otherwise be dropped without a word, and a
// number that is no number read as 0. (protobufjs's verify() wants a 64-bit integer as a
// number; OTLP's JSON writes it as a decimal string, as protobuf's JSON mapping does: the
// comparison below checks those instead.)
function mismatches(sent, read, path = '') {
  if (Array.isArray(sent)) {
    if (!Array.isArray(read) || read.length !== sent.length) return [`${path}: not read as a list`];
    return sent.flatMap((item, i) => mismatches(item, read[i], `${path}[${i}]`));
  }
  if (sent !== null && typeof sent === 'object') {
    if (read === null || typeof read !== 'object') return [`${path}: not read as a message`];
    return Object.keys(sent).flatMap((key) => (key in read
      ? mismatches(sent[key], read[key], `${path}.${key}`)
      : [`${path}.${key}: no such field`]));
  }
  return String(sent) === String(read) ? [] : [`${path}: ${JSON.stringify(sent)} read as ${JSON.stringify(read)}`];
}

// The decoded request, ids as hex again, 64-bit integers as decimal strings.
function decode(text) {
  const request = JSON.parse(text);
  idsToBase64(request);
  // Through the binary encoding and back: what a collector would hold.
  const message = Request.decode(Request.encode(Request.fromObject(request)).finish());
  const read = Request.toObject(message, { longs: String, enums: Number, bytes: String, defaults: true });
  const wrong = mismatches(request, read);
  if (wrong.length) throw new Error(`not an ExportTraceServiceRequest: ${wrong.join('; ')}`);
  const hex = Request.toObject(message, { longs: String, enums: Number, bytes: Array });
  for (const rs of hex.resourceSpans ?? []) {
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) {
        for (const field of Object.keys(ID_BYTES)) {
          if (span[field]?.length) span[field] = Buffer.from(span[field]).toString('hex');
          else delete span[field];
        }
      }
    }
  }
  return hex;
}

function attributesOf(list) {
  const out = {};
  for (const { key, value } of list ?? []) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : value);
  }
  return out;
}

export class OtlpReceiver {
  constructor() {
    this.spans = [];     // every span taken: {traceId, spanId, parentSpanId, name, kind, ..., attrs, resource}
    this.rejected = [];  // {error, body} of each request answered 400
    this.requests = 0;
    this.answer = 200;   // what to answer a valid request (a test sets 503 for an outage)
    this.server = createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => this.take(req, Buffer.concat(chunks).toString('utf8'), res));
    });
  }

  take(req, body, res) {
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    if (!String(req.headers['content-type']).startsWith('application/json')) {
      this.rejected.push({ error: `content-type ${req.headers['content-type']}`, body });
      res.writeHead(415).end();
      return;
    }
    let request;
    try {
      request = decode(body);
    } catch (e) {
      this.rejected.push({ error: e.message, body });
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ message: e.message }));
      return;
    }
    this.requests += 1;
    if (this.answer !== 200) {
      res.writeHead(this.answer).end();
      return;
    }
    for (const rs of request.resourceSpans ?? []) {
      const resource = attributesOf(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const span of ss.spans ?? []) {
          this.spans.push({ ...span, attrs: attributesOf(span.attributes), resource, scope: ss.scope });
        }
      }
    }
    // ExportTraceServiceResponse: empty is full success.
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  }

  async start() {
    await new Promise((res) => this.server.listen(0, '127.0.0.1', res));
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this;
  }

  async stop() {
    this.server.closeAllConnections?.();
    await new Promise((res) => this.server.close(res));
  }

  // Waits until `pred(spans)` holds (polling), or throws after `ms`.
  async until(pred, ms = 15_000) {
    const end = Date.now() + ms;
    while (!pred(this.spans)) {
      if (Date.now() > end) {
        throw new Error(`spans never matched; have ${JSON.stringify(this.spans.map((s) => s.name))}, rejected ${JSON.stringify(this.rejected)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return this.spans;
  }
}
