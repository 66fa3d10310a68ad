// tests/e2e/hostile_client.mjs: raw-socket HTTP/1.1 client pieces for hostile.test.mjs. The point is
// to send what a well-behaved client library never would (ambiguous framing, broken chunks, NUL
// bytes, half-closes, pipelines), so everything here works on bytes, and the response parser is
// strict: a response it cannot parse fails the test rather than being guessed at.
import net from 'node:net';
import fs from 'node:fs';

// One exchange on a fresh connection. Sends `bytes` (a Buffer, a string taken as latin1, or an
// array of them written with `gapMs` between), optionally half-closes, then reads until the server
// closes or `timeoutMs` passes. Resolves to { raw, responses, closed, ms }.
export function exchange(port, bytes, { timeoutMs = 10000, halfClose = false, gapMs = 0, host = '127.0.0.1' } = {}) {
  const parts = (Array.isArray(bytes) ? bytes : [bytes]).map((b) => (Buffer.isBuffer(b) ? b : Buffer.from(b, 'latin1')));
  return new Promise((resolve) => {
    const t0 = Date.now();
    const chunks = [];
    let closed = false, settled = false;
    const s = net.connect(port, host);
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s.destroy();
      const raw = Buffer.concat(chunks);
      resolve({ raw, responses: parseResponses(raw), closed, ms: Date.now() - t0 });
    };
    const timer = setTimeout(finish, timeoutMs);
    s.on('data', (d) => chunks.push(d));
    s.on('end', () => { closed = true; finish(); });
    s.on('close', () => { closed = true; finish(); });
    s.on('error', () => { closed = true; finish(); });
    s.on('connect', async () => {
      for (let i = 0; i < parts.length; ++i) {
        if (i && gapMs) await new Promise((r) => setTimeout(r, gapMs));
        if (s.destroyed) return;
        s.write(parts[i]);
      }
      if (halfClose) s.end();
    });
  });
}

// Parses every complete response in `raw` (a pipeline answers several on one connection).
// Bodies framed by Content-Length, chunked, or (last response only) by the close.
export function parseResponses(raw) {
  const out = [];
  let at = 0;
  while (at < raw.length) {
    const headEnd = raw.indexOf('\r\n\r\n', at, 'latin1');
    if (headEnd < 0) break;
    const lines = raw.subarray(at, headEnd).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3}) /.exec(lines[0] + ' ');
    if (!m) throw new Error(`not an HTTP response: ${JSON.stringify(lines[0].slice(0, 80))}`);
    const headers = {};
    for (const l of lines.slice(1)) {
      const c = l.indexOf(':');
      if (c < 0) throw new Error(`bad response header line ${JSON.stringify(l.slice(0, 80))}`);
      const k = l.slice(0, c).trim().toLowerCase();
      headers[k] = headers[k] === undefined ? l.slice(c + 1).trim() : `${headers[k]}, ${l.slice(c + 1).trim()}`;
    }
    let p = headEnd + 4;
    let body;
    if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
      const parts = [];
      for (;;) {
        const e = raw.indexOf('\r\n', p, 'latin1');
        if (e < 0) { p = raw.length; break; }  // cut short: keep what came
        const n = parseInt(raw.subarray(p, e).toString('latin1'), 16);
        if (!Number.isFinite(n)) throw new Error('bad chunk size in a response');
        p = e + 2;
        if (n === 0) { p = raw.indexOf('\r\n\r\n', p - 2, 'latin1') + 4 || raw.length; break; }
        parts.push(raw.subarray(p, p + n));
        p += n + 2;
      }
      body = Buffer.concat(parts);
    } else if (headers['content-length'] !== undefined) {
      const n = Number(headers['content-length']);
      body = raw.subarray(p, p + n);
      p += n;
    } else {
      body = raw.subarray(p);
      p = raw.length;
    }
    out.push({ status: Number(m[1]), headers, body: body.toString('utf8') });
    at = p;
  }
  return out;
}

// GET /health on a fresh connection: milliseconds until a 200 {"status":"ok"} was in, or
// Infinity when none came within `limitMs`.
export async function healthMs(port, limitMs = 2000) {
  const r = await exchange(port, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', { timeoutMs: limitMs });
  const ok = r.responses.length === 1 && r.responses[0].status === 200 && r.responses[0].body.includes('"ok"');
  return ok && r.ms <= limitMs ? r.ms : Infinity;
}

// The server process: alive (not gone, not a zombie) and its resident set in MiB.
export function processState(pid) {
  let status;
  try {
    status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return { alive: false, rssMiB: 0, peakMiB: 0 };
  }
  const kb = (k) => Number((new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status) || [, 0])[1]);
  const state = (/^State:\s+(\S)/m.exec(status) || [, '?'])[1];
  return { alive: state !== 'Z' && state !== 'X', rssMiB: kb('VmRSS') / 1024, peakMiB: kb('VmHWM') / 1024 };
}

// A request with the given method, path, headers (an object or raw header text) and body.
export function request(method, path, { headers = {}, body = null, key = null, close = true } = {}) {
  let head = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
  if (key) head += `Authorization: Bearer ${key}\r\n`;
  if (close) head += 'Connection: close\r\n';
  if (typeof headers === 'string') head += headers;
  else for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  const b = body === null ? null : Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  if (b && !/content-length|transfer-encoding/i.test(typeof headers === 'string' ? headers : Object.keys(headers).join(' ')))
    head += `Content-Length: ${b.length}\r\n`;
  return Buffer.concat([Buffer.from(head + '\r\n', 'latin1'), b ?? Buffer.alloc(0)]);
}
