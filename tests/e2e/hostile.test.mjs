// tests/e2e/hostile.test.mjs: hostile clients against a real `k3 serve` process on loopback
// (started by run.sh: golden small model, --api-key, --max-body 1 MiB, --request-timeout 3 s,
// 2 slots). Every case sends what an attacker or a broken client would, over raw sockets, and
// asserts four things: the expected status (with the OpenAI error shape for a 4xx), that /health
// answers within 2 s on a fresh connection while the attack is in flight and after it, that the
// server's resident set stays under K3_RSS_LIMIT_MIB, and that the process is still alive.
// Needs K3_BASE_URL, K3_SERVER_PID and K3_API_KEY.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import zlib from 'node:zlib';
import { exchange, healthMs, processState, request } from './hostile_client.mjs';

const port = Number(new URL(process.env.K3_BASE_URL).port);
const pid = Number(process.env.K3_SERVER_PID);
const KEY = process.env.K3_API_KEY;
const RSS_LIMIT_MIB = Number(process.env.K3_RSS_LIMIT_MIB || 1024);
const MAX_BODY = 1 << 20;  // run.sh's --max-body
const JSON_CT = { 'Content-Type': 'application/json' };
const hi = [{ role: 'user', content: 'hi' }];

const send = (bytes, opts) => exchange(port, bytes, opts);
const post = (path, body, extra = {}) =>
  request('POST', path, { key: KEY, headers: { ...JSON_CT, ...extra }, body: typeof body === 'string' ? body : JSON.stringify(body) });
const chat = (fields, extra) => post('/v1/chat/completions', { messages: hi, max_tokens: 2, ...fields }, extra);

// An OpenAI-style error body: {"error": {"message": string, "type": string, ...}}.
function assertErrorShape(res) {
  let j;
  assert.doesNotThrow(() => { j = JSON.parse(res.body); }, `a ${res.status} with a non-JSON body: ${res.body.slice(0, 200)}`);
  assert.equal(typeof j.error?.message, 'string', res.body.slice(0, 200));
  assert.equal(typeof j.error?.type, 'string', res.body.slice(0, 200));
}

// One response with status `want` (a number or a list of numbers).
function expectStatus(r, want, { closes = null } = {}) {
  assert.ok(r.responses.length >= 1, `no response (got ${r.raw.length} bytes: ${JSON.stringify(r.raw.toString('latin1').slice(0, 120))})`);
  const res = r.responses[0];
  const wants = Array.isArray(want) ? want : [want];
  assert.ok(wants.includes(res.status), `status ${res.status}, want ${wants.join('|')}: ${res.body.slice(0, 300)}`);
  if (res.status >= 400 && res.status < 500) assertErrorShape(res);
  if (closes !== null) assert.equal(r.closed, closes, closes ? 'the connection should have been closed' : 'the connection should stay open');
  return res;
}

// A hostile case: runs `attack()` (resolving to whatever `check` needs), probes /health on a
// fresh connection while it runs and after, then checks the answer, the RSS and the process.
const ledger = [];
function hostile(name, attack, check) {
  test(name, async () => {
    const started = Date.now();
    const running = attack();
    const during = [];
    let done = false;
    running.finally(() => { done = true; });
    await new Promise((r) => setTimeout(r, 30));
    do during.push(await healthMs(port)); while (!done && during.length < 3);
    const result = await running;
    const afterMs = await healthMs(port);
    const st = processState(pid);
    ledger.push({ name, ms: Date.now() - started, health_ms: Math.max(...during, afterMs), rss_mib: Math.round(st.rssMiB) });
    assert.ok(st.alive, 'k3 serve is gone');
    await check(result);
    assert.ok(during.every(Number.isFinite), `/health did not answer within 2 s during the attack (${during})`);
    assert.ok(Number.isFinite(afterMs), '/health did not answer within 2 s after the attack');
    assert.ok(st.rssMiB < RSS_LIMIT_MIB, `RSS ${st.rssMiB.toFixed(0)} MiB over the ${RSS_LIMIT_MIB} MiB bound`);
  });
}

after(() => {
  const st = processState(pid);
  console.log(`hostile suite: ${ledger.length} cases, server peak RSS ${st.peakMiB.toFixed(0)} MiB, ` +
    `slowest /health ${Math.max(...ledger.map((l) => l.health_ms))} ms`);
});

const deep = (n) => '['.repeat(n) + ']'.repeat(n);
const deepObj = (n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

// ---- framing (RFC 9112) ----
hostile('pipelined GETs are answered in order', () =>
  send('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' +
       'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
(r) => {
  assert.deepEqual(r.responses.map((x) => x.status), [200, 200, 200]);
  assert.match(r.responses[1].body, /"object":"list"/);
});
hostile('a pipelined POST then GET are both answered', () =>
  send(Buffer.concat([request('POST', '/tokenize', { key: KEY, close: false, headers: JSON_CT, body: '{"content":"hello"}' }),
    Buffer.from('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')])),
(r) => {
  assert.deepEqual(r.responses.map((x) => x.status), [200, 200]);
  assert.match(r.responses[0].body, /^\{"tokens":\[\d/);
});
for (const [what, cl] of [['negative', '-1'], ['signed', '+17'], ['trailing junk', '17abc'], ['a list', '17, 3'],
  ['hexadecimal', '0x11'], ['empty', ''], ['20 digits', '99999999999999999999']]) {
  hostile(`a ${what} Content-Length is refused before the body`, () =>
    send(request('POST', '/v1/chat/completions', { key: KEY, headers: `Content-Type: application/json\r\nContent-Length: ${cl}\r\n`, body: '{"messages":[]} ' })),
  (r) => expectStatus(r, [400, 413], { closes: true }));
}
hostile('two different Content-Lengths are refused', () =>
  send(request('POST', '/tokenize', { key: KEY, headers: 'Content-Length: 15\r\nContent-Length: 3\r\n', body: '{"content":"x"}' })),
(r) => expectStatus(r, 400, { closes: true }));
hostile('Content-Length together with chunked is refused', () =>
  send(request('POST', '/tokenize', { key: KEY, close: false, headers: 'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n', body: '0\r\n\r\n' })),
(r) => expectStatus(r, 400, { closes: true }));
for (const te of ['gzip', 'chunked, gzip', 'chunked, chunked', 'identity', 'xchunked']) {
  hostile(`Transfer-Encoding "${te}" is refused`, () =>
    send(request('POST', '/tokenize', { key: KEY, headers: `Transfer-Encoding: ${te}\r\n`, body: '0\r\n\r\n' })),
  (r) => expectStatus(r, [400, 501], { closes: true }));
}
for (const [what, body] of [['non-hex size', 'zz\r\n{}\r\n0\r\n\r\n'], ['negative size', '-5\r\nhello\r\n0\r\n\r\n'],
  ['size that overflows 64 bits', 'fffffffffffffffffffff\r\nx\r\n0\r\n\r\n'], ['data without its CRLF', '2\r\n{}XX0\r\n\r\n'],
  ['size line over 16 KiB', '0'.repeat(20000) + '1\r\nx\r\n0\r\n\r\n']]) {
  hostile(`a chunk with a ${what} is refused`, () =>
    send(request('POST', '/tokenize', { key: KEY, headers: 'Transfer-Encoding: chunked\r\n', body })),
  (r) => expectStatus(r, [400, 413], { closes: true }));
}
hostile('a chunked body over --max-body is a 413', () =>
  send(request('POST', '/tokenize', { key: KEY, headers: 'Transfer-Encoding: chunked\r\n',
    body: ('4000\r\n' + ' '.repeat(0x4000) + '\r\n').repeat(80) + '0\r\n\r\n' })),
(r) => expectStatus(r, 413, { closes: true }));
hostile('a body read to EOF over --max-body is a 413', () =>
  send([Buffer.from(`POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\nConnection: close\r\n\r\n`),
    Buffer.alloc(MAX_BODY + 4096, 32)], { halfClose: true }),
(r) => expectStatus(r, [400, 411, 413]));
hostile('a gzip bomb (32 MiB from 32 KiB) is a 413', () => {
  const gz = zlib.gzipSync(Buffer.alloc(32 << 20, 32));
  return send(request('POST', '/tokenize', { key: KEY, headers: { ...JSON_CT, 'Content-Encoding': 'gzip' }, body: gz }));
}, (r) => expectStatus(r, 413, { closes: true }));
hostile('a brotli body that is not brotli is refused', () =>
  send(request('POST', '/tokenize', { key: KEY, headers: { ...JSON_CT, 'Content-Encoding': 'br' }, body: 'this is not brotli at all' })),
(r) => expectStatus(r, [400, 415]));
hostile('an unknown Content-Encoding is refused', () =>
  send(request('POST', '/tokenize', { key: KEY, headers: { ...JSON_CT, 'Content-Encoding': 'zstd' }, body: '{"content":"x"}' })),
(r) => expectStatus(r, [400, 415]));
hostile('a body on a GET is refused, not parsed as the next request', () =>
  send('GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 40\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n'),
(r) => { expectStatus(r, 400, { closes: true }); assert.equal(r.responses.length, 1); });
hostile('a body on an OPTIONS is refused', () =>
  send('OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}'),
(r) => expectStatus(r, 400, { closes: true }));

// ---- request line and headers ----
hostile('a 1 MB request line is refused before it is buffered', () =>
  send('GET /' + 'a'.repeat(1 << 20) + ' HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'),
(r) => { expectStatus(r, [400, 414, 431], { closes: true }); assert.ok(r.ms < 2000, `${r.ms} ms`); });
hostile('a 1 MB header line is refused', () =>
  send('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ' + 'a'.repeat(1 << 20) + '\r\n\r\n'),
(r) => expectStatus(r, [400, 431], { closes: true }));
hostile('300 headers of 400 bytes (120 KB) are refused', () =>
  send('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n' + Array.from({ length: 300 }, (_, i) => `X-H${i}: ${'v'.repeat(400)}\r\n`).join('') + '\r\n'),
(r) => expectStatus(r, [400, 431], { closes: true }));
hostile('a NUL in the Authorization value does not authenticate', () =>
  send(request('POST', '/tokenize', { headers: `Authorization: Bearer ${KEY}\0junk\r\nContent-Type: application/json\r\n`, body: '{"content":"x"}' })),
(r) => expectStatus(r, [400, 401], { closes: true }));
hostile('a NUL in another header value is refused', () =>
  send('GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\0b\r\n\r\n'),
(r) => expectStatus(r, 400, { closes: true }));
hostile('a header line without a colon is refused', () =>
  send('GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n'),
(r) => expectStatus(r, 400, { closes: true }));
hostile('binary junk instead of a request line is refused', () =>
  send(Buffer.concat([Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 131 + 7) & 255).filter((b) => b !== 10 && b !== 13)),
    Buffer.from('\r\n\r\n')])),
(r) => expectStatus(r, [400, 505], { closes: true }));
hostile('an unknown HTTP version is refused', () =>
  send('GET /health HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n'),
(r) => expectStatus(r, [400, 505], { closes: true }));
hostile('a half-closed client still gets its answer', () =>
  send('GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', { halfClose: true }),
(r) => expectStatus(r, 200));
hostile('2000 byte ranges get the body once, not 2000 copies', () =>
  send('GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nRange: bytes=' + Array(2000).fill('0-0').join(',') + '\r\n\r\n'),
(r) => {
  const res = expectStatus(r, 200);
  assert.equal(r.responses.length, 1);
  assert.doesNotThrow(() => JSON.parse(res.body));
  assert.ok(r.raw.length < 4096, `${r.raw.length} bytes`);
});

// ---- methods ----
const routes = ['/v1/chat/completions', '/v1/completions', '/tokenize', '/detokenize', '/apply-template', '/health',
  '/v1/models', '/metrics', '/props', '/', '/nonexistent'];
for (const path of routes) {
  hostile(`unknown methods on ${path} are refused`, async () => {
    const out = [];
    for (const m of ['PUT', 'DELETE', 'PATCH', 'TRACE', 'CONNECT', 'BREW', 'get'])
      out.push([m, await send(`${m} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\nConnection: close\r\n\r\n`)]);
    return out;
  }, (out) => {
    for (const [m, r] of out) {
      const res = r.responses[0];
      assert.ok(res && res.status >= 400 && res.status < 500, `${m} ${path}: ${res?.status}`);
    }
  });
}

// ---- key, Host, Origin ----
hostile('a refused request\'s body is not parsed as the next request', () =>
  send(request('POST', '/tokenize', { close: false, headers: 'Authorization: Bearer wrong\r\nContent-Type: application/json\r\n',
    body: 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' })),
(r) => { expectStatus(r, 401, { closes: true }); assert.equal(r.responses.length, 1); });
hostile('a lower-case "bearer" scheme is not the key', () =>
  send(request('GET', '/metrics', { headers: `Authorization: bearer ${KEY}\r\n` })),
(r) => expectStatus(r, 401));
hostile('a foreign Host name is refused (DNS rebinding)', () =>
  send('GET /v1/models HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n'),
(r) => expectStatus(r, 403));
hostile('a cross-site text/plain POST runs nothing', () =>
  send(request('POST', '/v1/chat/completions', { key: KEY, headers: { 'Content-Type': 'text/plain', Origin: 'https://evil.example' },
    body: JSON.stringify({ messages: hi, max_tokens: 2 }) })),
(r) => expectStatus(r, 403));
hostile('a preflight from a foreign origin is refused', () =>
  send('OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://evil.example\r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n'),
(r) => { const res = expectStatus(r, 403); assert.equal(res.headers['access-control-allow-origin'], undefined); });
hostile('Origin: null is refused', () =>
  send(request('GET', '/v1/models', { headers: { Origin: 'null' } })),
(r) => expectStatus(r, 403));

// ---- JSON bodies ----
hostile('an array nested 100 000 deep is a 400', () => send(post('/v1/chat/completions', '{"messages":' + deep(100000) + '}')),
  (r) => expectStatus(r, 400));
hostile('an object nested 100 000 deep is a 400', () => send(post('/tokenize', deepObj(100000))),
  (r) => expectStatus(r, 400));
hostile('tool-call arguments nested 300 000 deep stay a string', () =>
  send(post('/apply-template', { messages: [...hi, { role: 'assistant', content: '', tool_calls: [{ id: 'a', type: 'function',
    function: { name: 'f', arguments: '{"a":' + deep(300000) + '}' } }] }, { role: 'tool', tool_call_id: 'a', content: 'ok' }] })),
(r) => { const res = expectStatus(r, 200); assert.match(JSON.parse(res.body).prompt, /\[\[\[\[/); });
hostile('60 000 keys in one object parse in linear time', () =>
  send(post('/tokenize', '{' + Array.from({ length: 60000 }, (_, i) => `"k${i}":${i}`).join(',') + ',"content":"x"}')),
(r) => { expectStatus(r, 200); assert.ok(r.ms < 2000, `${r.ms} ms`); });
hostile('20 000 tool calls in one message render in linear time', () => {
  const calls = Array.from({ length: 20000 }, (_, i) => ({ id: `c${i}`, type: 'function', function: { name: 'f', arguments: '{}' } }));
  return send(post('/apply-template', { messages: [...hi, { role: 'assistant', content: '', tool_calls: calls },
    ...calls.slice(0, 2000).map((c) => ({ role: 'tool', tool_call_id: c.id, content: 'r' }))] }));
}, (r) => { expectStatus(r, [200, 400, 413]); assert.ok(r.ms < 3000, `${r.ms} ms`); });
hostile('a lone surrogate escape is replaced, not crashed on', () => send(post('/tokenize', '{"content":"a\\ud800b\\udfffc"}')),
  (r) => expectStatus(r, [200, 400]));
hostile('invalid UTF-8 bytes in a string are a 400', () =>
  send(post('/tokenize', Buffer.concat([Buffer.from('{"content":"a'), Buffer.from([0xff, 0xfe, 0xc0, 0x80]), Buffer.from('"}')]).toString('latin1'))),
(r) => expectStatus(r, [200, 400]));
hostile('invalid UTF-8 in a key is a 400', () =>
  send(request('POST', '/v1/chat/completions', { key: KEY, headers: JSON_CT,
    body: Buffer.concat([Buffer.from('{"messages":[{"role":"user","'), Buffer.from([0xc3, 0x28]), Buffer.from('":"x","content":"hi"}],"max_tokens":1}')]) })),
(r) => expectStatus(r, 400));
hostile('a content part of an unknown type is a 400 naming it', () =>
  send(chat({ messages: [{ role: 'user', content: [{ type: 'video', url: 'x' }] }] })),
(r) => { const res = expectStatus(r, 400); assert.match(JSON.parse(res.body).error.param ?? '', /content/); });
hostile('a content part that is not an object is a 400', () =>
  send(chat({ messages: [{ role: 'user', content: [42] }] })),
(r) => expectStatus(r, 400));
hostile('text content parts generate', () =>
  send(chat({ messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'text', text: ' there' }] }] })),
(r) => { const res = expectStatus(r, 200); assert.equal(JSON.parse(res.body).object, 'chat.completion'); });
for (const [what, body] of [['an empty body', ''], ['a JSON array', '[]'], ['truncated JSON', '{"messages":[{"role":"user"'],
  ['a NaN', '{"messages":[{"role":"user","content":"hi"}],"temperature":NaN}'], ['trailing garbage', '{"messages":[]} x']]) {
  hostile(`${what} is a 400`, () => send(post('/v1/chat/completions', body)), (r) => expectStatus(r, 400));
}

// ---- fields the sampler or the engine would refuse later ----
for (const [field, value] of [['top_p', 0], ['top_p', 1e-50], ['repeat_penalty', 0], ['repeat_penalty', 1e-50], ['temperature', -1],
  ['max_tokens', -5], ['max_tokens', 0], ['n', 1000], ['seed', 'x'], ['stop', Array(5000).fill('a')], ['logit_bias', { 999999999: 5 }],
  ['top_k', -3], ['min_p', 2]]) {
  hostile(`${field} = ${JSON.stringify(value).slice(0, 20)} is refused before any work`, () => send(chat({ [field]: value })),
    (r) => expectStatus(r, 400));
}
hostile('max_tokens beyond the context is clamped to it', () => send(chat({ max_tokens: 1e15, seed: 1 })),
  (r) => expectStatus(r, 200));
hostile('a prompt longer than the context is a 400', () => send(chat({ messages: [{ role: 'user', content: 'hello '.repeat(6000) }] })),
  (r) => expectStatus(r, 400));
hostile('a schema nested 10 000 deep is a 400', () =>
  send(chat({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: JSON.parse(deepObj(200).replaceAll('"a":', '"items":')) } } })),
(r) => expectStatus(r, 400));
hostile('an invalid grammar is a 400', () => send(chat({ grammar: 'root ::= ( "a" ' })), (r) => expectStatus(r, 400));
hostile('token ids out of range are a 400', () => send(post('/detokenize', { tokens: [1, -1, 2 ** 40] })), (r) => expectStatus(r, 400));
hostile('/tokenize of 1 MB with pieces stays small', () =>
  send(post('/tokenize', { content: 'ab '.repeat(330000), with_pieces: true })),
(r) => { const res = expectStatus(r, 200); assert.ok(res.body.startsWith('{"tokens":[{"id":')); });
hostile('a forged /metrics path does not forge a sample', async () => {
  await send('GET /x%22%7D%201%0Ak3_forged HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
  return send(request('GET', '/metrics', { key: KEY }));
}, (r) => { const res = expectStatus(r, 200); assert.doesNotMatch(res.body, /k3_forged|%22/); });

// ---- connections ----
hostile('200 idle connections do not starve /health', async () => {
  const socks = await Promise.all(Array.from({ length: 200 }, () => new Promise((res) => {
    const s = net.connect(port, '127.0.0.1', () => res(s));
    s.on('error', () => res(s));
  })));
  const ms = [];
  for (let i = 0; i < 3; ++i) ms.push(await healthMs(port));
  const open = socks.filter((s) => !s.destroyed).length;
  for (const s of socks) s.destroy();
  return { ms, open };
}, ({ ms }) => assert.ok(ms.every(Number.isFinite), `health with 200 idle sockets: ${ms}`));
hostile('idle connections are closed at the read deadline', () =>
  send('', { timeoutMs: 8000 }),
(r) => { assert.ok(r.closed, 'an idle connection was kept past 8 s'); });
hostile('a slow-loris header trickle is cut with a 408', () =>
  send(Array.from('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + 'a'.repeat(200)), { gapMs: 50, timeoutMs: 8000 }),
(r) => { expectStatus(r, 408, { closes: true }); assert.ok(r.ms < 6000, `${r.ms} ms`); });
hostile('30 slow-loris sockets at once are all cut', async () => {
  const text = Array.from('POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + 'a'.repeat(200));
  return Promise.all(Array.from({ length: 30 }, () => send(text, { gapMs: 100, timeoutMs: 9000 })));
}, (rs) => { for (const r of rs) expectStatus(r, 408, { closes: true }); });
hostile('20 streams dropped after their first byte free their slots', async () => {
  const one = () => new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(chat({ stream: true, max_tokens: 200 })));
    s.once('data', () => { s.destroy(); resolve(); });
    s.on('error', resolve);
    s.setTimeout(10000, () => { s.destroy(); resolve(); });
  });
  await Promise.all(Array.from({ length: 20 }, one));
  const t0 = Date.now();
  let busy = '';
  while (Date.now() - t0 < 5000) {  // the scheduler notices each hang-up at its next token
    const m = await send(request('GET', '/metrics', { key: KEY }));
    busy = /^k3_requests_processing (\d+)/m.exec(m.responses[0]?.body ?? '')?.[1];
    if (busy === '0') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { busy, next: await send(chat({ max_tokens: 2 })) };
}, ({ busy, next }) => { assert.equal(busy, '0', 'slots still busy 5 s after their clients left'); expectStatus(next, 200); });
hostile('connect-and-close storms leave the server serving', async () => {
  await Promise.all(Array.from({ length: 300 }, () => new Promise((res) => {
    const s = net.connect(port, '127.0.0.1', () => { s.destroy(); res(); });
    s.on('error', res);
  })));
  return send(request('GET', '/v1/models'));
}, (r) => expectStatus(r, 200));
hostile('a non-streaming client that leaves mid-generation costs nothing after', async () => {
  await send(chat({ max_tokens: 100 }), { timeoutMs: 50 });
  return send(chat({ max_tokens: 2 }));
}, (r) => expectStatus(r, 200));
