// bench/hostile_loop.mjs BASE_URL SECONDS: a hostile client for bench/mixed_load.sh. Until the time
// is up it runs, in a loop, the attack classes of `cases` below (deep or huge bodies, ambiguous
// framing, forged paths and origins, bad UTF-8, mid-stream disconnects) against k3 serve over raw
// sockets. Meanwhile it holds 10 slow-loris sockets that send one header byte a second. After each
// round it checks that /health answers within 2 s on a fresh connection. At the end it prints one
// JSON line: rounds, requests, per-class status counts and health failures.
import net from 'node:net';
import zlib from 'node:zlib';

const [base, seconds] = process.argv.slice(2);
const { hostname: host, port } = new URL(base);
const deadline = Date.now() + Number(seconds) * 1000;

function raw(bytes, timeoutMs = 10000) {
  return new Promise((resolve) => {
    const s = net.connect(Number(port), host);
    let out = '';
    const done = () => { s.destroy(); resolve(out); };
    s.setTimeout(timeoutMs, done);
    s.on('data', (d) => { out += d.toString('latin1'); });
    s.on('error', done);
    s.on('close', done);
    s.on('connect', () => s.end(bytes));
  });
}

const post = (path, body, extra = '') =>
  Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n${extra}Content-Length: ${body.length}\r\n\r\n`), Buffer.from(body)]);
const deep = (n) => '['.repeat(n) + ']'.repeat(n);
const gz = zlib.gzipSync(Buffer.alloc(30_000_000, 32));
const chunked = Buffer.from('POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n' +
  ('1000\r\n' + ' '.repeat(4096) + '\r\n').repeat(3000) + '0\r\n\r\n');  // 12 MB
const manyKeys = '{' + Array.from({ length: 80000 }, (_, i) => `"k${i}":${i}`).join(',') + ',"messages":[]}';
const toolArgs = JSON.stringify({ messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: '', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{"a":' + deep(300000) + '}' } }] }, { role: 'tool', tool_call_id: 'a', content: 'ok' }], max_tokens: 1 });

const cases = {
  deep_body: () => raw(post('/v1/chat/completions', '{"messages":' + deep(100000) + '}')),
  deep_tool_args: () => raw(post('/apply-template', toolArgs)),
  many_keys: () => raw(post('/v1/chat/completions', manyKeys)),
  chunked_12mb: () => raw(chunked),
  gzip_30mb: () => raw(Buffer.concat([Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Encoding: gzip\r\nContent-Length: ${gz.length}\r\n\r\n`), gz])),
  bad_framing: () => raw(Buffer.from('POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n')),
  lenient_length: () => raw(Buffer.from('POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: +17\r\n\r\n{"messages":[]}  ')),
  get_with_body: () => raw(Buffer.from('GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 40\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n')),
  ranges: () => raw(Buffer.from('GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nRange: bytes=' + Array(2000).fill('0-0').join(',') + '\r\n\r\n')),
  forged_metrics_path: () => raw(Buffer.from('GET /x%22%7D%201%0Ak3_forged HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')),
  cross_site: () => raw(post('/v1/chat/completions', '{"messages":[{"role":"user","content":"hi"}]}', 'Origin: https://evil.example\r\n')),
  rebinding: () => raw(Buffer.from('GET /v1/models HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n')),
  sampler_zero: () => raw(post('/v1/chat/completions', '{"messages":[{"role":"user","content":"hi"}],"top_p":1e-50}')),
  bad_utf8: () => raw(post('/v1/chat/completions', '{"messages":[{"role":"user","content":"\xff\xfe\ud800"}]}')),
  unknown_part: () => raw(post('/v1/chat/completions', '{"messages":[{"role":"user","content":[{"type":"video","x":1}]}]}')),
  no_length_eof: () => raw(Buffer.from('POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' + ' '.repeat(2_000_000))),
  tokenize_pieces: () => raw(post('/tokenize', JSON.stringify({ content: 'a'.repeat(1_000_000), with_pieces: true }))),
  disconnect_mid_stream: () => new Promise((resolve) => {
    const s = net.connect(Number(port), host, () => s.write(post('/v1/chat/completions', '{"messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":200}')));
    s.once('data', () => { s.destroy(); resolve('HTTP/1.1 200 (dropped)'); });
    s.on('error', () => resolve(''));
    s.setTimeout(10000, () => { s.destroy(); resolve(''); });
  }),
};

const loris = [];
function slowLoris() {
  const s = net.connect(Number(port), host);
  const text = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + 'a'.repeat(10000);
  let i = 0;
  const t = setInterval(() => { if (i < text.length) s.write(text[i++]); }, 1000);
  s.on('error', () => {});
  s.on('close', () => { clearInterval(t); if (Date.now() < deadline) setTimeout(slowLoris, 100); });
  loris.push({ s, t });
}
for (let i = 0; i < 10; ++i) slowLoris();

async function health() {
  const t0 = Date.now();
  const r = await raw(Buffer.from('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'), 2000);
  return r.startsWith('HTTP/1.1 200') && Date.now() - t0 <= 2000;
}

const status = {};
let rounds = 0, requests = 0, healthFailures = 0;
while (Date.now() < deadline) {
  for (const [name, run] of Object.entries(cases)) {
    const r = await run();
    ++requests;
    const code = (r.match(/^HTTP\/1\.1 (\d{3})/) || [, 'none'])[1];
    status[name] = status[name] || {};
    status[name][code] = (status[name][code] || 0) + 1;
    if (!(await health())) ++healthFailures;
    if (Date.now() >= deadline) break;
  }
  ++rounds;
}
for (const { s, t } of loris) { clearInterval(t); s.destroy(); }
console.log(JSON.stringify({ rounds, requests, health_failures: healthFailures, status }));
process.exit(0);
