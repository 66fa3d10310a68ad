// tests/e2e/hostile_images.test.mjs: hostile and broken images against a real `k3 serve --mmproj`
// (run.sh: the embedded k3-tiny with tests/data/vision/mmproj-vt-a.gguf, --api-key, --parallel 2,
// the default body limit with a tower, 32 MiB). Every case sends what a broken or hostile client
// would, over raw sockets, and asserts the status (a 4xx in the OpenAI error shape naming the
// part, or a 200 for what is a legal image), that /health answers within 2 s on a fresh
// connection while the case runs and after it, that the server's resident set stays under
// K3_RSS_LIMIT_MIB, and that the process is alive. Needs K3_BASE_URL, K3_SERVER_PID, K3_API_KEY.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { exchange, healthMs, processState, request } from './hostile_client.mjs';
import { dataUrl, deflateRepeated, fixture, fixtureDir, imagePart, noisePng, pngAround, solidPng } from './images.mjs';

const port = Number(new URL(process.env.K3_BASE_URL).port);
const pid = Number(process.env.K3_SERVER_PID);
const KEY = process.env.K3_API_KEY;
const RSS_LIMIT_MIB = Number(process.env.K3_RSS_LIMIT_MIB || 1024);
const MAX_BODY = 32 << 20;  // k3 serve's default with --mmproj (run.sh sets none)
const MAX_IMAGE_BYTES = 20 << 20;  // image::Limits::max_bytes, as /v1/models reports it

const chatBytes = (body) => request('POST', '/v1/chat/completions', {
  key: KEY, headers: { 'Content-Type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body),
});
const withImages = (parts, extra = {}) => ({
  messages: [{ role: 'user', content: [...parts, { type: 'text', text: 'What is this?' }] }], max_tokens: 1, temperature: 0, ...extra,
});
const send = (body, opts) => exchange(port, chatBytes(body), { timeoutMs: 60000, ...opts });
const sendImage = (url, extra) => send(withImages([imagePart(url)], extra));

// One response with status `want` (a number or a list), its error naming `param` and matching `says`.
function expectStatus(r, want, { says = null, param = 'messages[0].content[0]' } = {}) {
  assert.ok(r.responses.length >= 1, `no response (got ${r.raw.length} bytes: ${JSON.stringify(r.raw.toString('latin1').slice(0, 120))})`);
  const res = r.responses[0];
  const wants = Array.isArray(want) ? want : [want];
  assert.ok(wants.includes(res.status), `status ${res.status}, want ${wants.join('|')}: ${res.body.slice(0, 300)}`);
  if (res.status >= 400 && res.status < 500) {
    let j;
    assert.doesNotThrow(() => { j = JSON.parse(res.body); }, `a ${res.status} with a non-JSON body: ${res.body.slice(0, 200)}`);
    assert.equal(typeof j.error?.message, 'string', res.body.slice(0, 200));
    assert.equal(typeof j.error?.type, 'string', res.body.slice(0, 200));
    if (res.status === 400 && param !== null) {
      assert.equal(j.error.param, param, res.body.slice(0, 300));
      assert.ok(j.error.message.startsWith(`${param}: `), `the message names the part: ${j.error.message.slice(0, 200)}`);
    }
    if (says) assert.match(j.error.message, says);
  }
  return res;
}
const promptTokens = (res) => JSON.parse(res.body).usage.prompt_tokens;

// A hostile case: runs `attack()`, probes /health on a fresh connection while it runs and after,
// then checks the answer, the RSS and the process.
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
    const ms = Date.now() - started;
    const afterMs = await healthMs(port);
    const st = processState(pid);
    ledger.push({ name, ms, health_ms: Math.max(...during, afterMs), rss_mib: Math.round(st.rssMiB), peak_mib: Math.round(st.peakMiB) });
    assert.ok(st.alive, 'k3 serve is gone');
    await check(result, ms);
    assert.ok(during.every(Number.isFinite), `/health did not answer within 2 s during the case (${during})`);
    assert.ok(Number.isFinite(afterMs), '/health did not answer within 2 s after the case');
    assert.ok(st.rssMiB < RSS_LIMIT_MIB, `RSS ${st.rssMiB.toFixed(0)} MiB over the ${RSS_LIMIT_MIB} MiB bound`);
  });
}

let baseline;  // prompt tokens of the question with one small image
let imageCost;  // the positions that image takes
const small = dataUrl(fixture('ok-8x6-png-rgb.png'));
test('the server sees a small image (the baseline)', async () => {
  baseline = promptTokens(expectStatus(await sendImage(small), 200));
  const none = promptTokens(expectStatus(await send(withImages([])), 200));
  imageCost = baseline - none;
  assert.ok(imageCost > 2, `an image takes positions (${baseline} vs ${none})`);
  console.log(`idle: RSS ${processState(pid).rssMiB.toFixed(0)} MiB`);
});

// ---- broken and hostile files ----
for (const [what, bytes, type, says] of [
  ['a truncated PNG', fixture('bad-png-truncated.png'), 'image/png', /PNG truncated or corrupt/],
  ['a truncated JPEG', fixture('bad-jpeg-truncated.jpg'), 'image/jpeg', /JPEG/],
  ['a truncated GIF', fixture('ok-8x6-gif.gif').subarray(0, 30), 'image/gif', /GIF truncated or corrupt/],
  ['a truncated WebP', fixture('bad-webp-truncated.webp'), 'image/webp', /WebP truncated or corrupt/],
  ['a PNG declaring 100000x100000', fixture('bad-png-100000x100000.png'), 'image/png', /over the 16384-pixel side limit/],
  ['a 7000x7000 PNG header over 12 bytes of data (bomb)', fixture('bad-png-bomb-7000x7000.png'), 'image/png', /decompression bomb/],
  ['a JPEG of 130 scans', fixture('bad-jpeg-130-scans.jpg'), 'image/jpeg', /more than 100 scans/],
  ['a GIF whose frame lies outside its screen', fixture('bad-gif-frame-outside-screen.gif'), 'image/gif', /GIF/],
  ['text labelled image/png', Buffer.from('hello, I am not a picture at all'), 'image/png', /unknown format/],
  ['an SVG', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><image href="http://x.invalid/a.png"/></svg>'),
    'image/svg+xml', /SVG/],
]) {
  hostile(`${what} is a 400 naming the part`, () => sendImage(dataUrl(bytes, type)), (r) => expectStatus(r, 400, { says }));
}

hostile('a 16384x16384 solid image (valid, 268 Mpixels) is refused by the pixel limit, unread', async () => {
  const png = await solidPng(16384, 16384, [200, 0, 0]);
  return { r: await sendImage(dataUrl(png)), bytes: png.length };
}, ({ r, bytes }, ms) => {
  expectStatus(r, 400, { says: /16384x16384 \(268435456 pixels\), over the 50000000-pixel limit/ });
  console.log(`16384x16384 solid PNG: ${bytes} bytes, refused in ${ms} ms (generating it included)`);
});

hostile('a zlib bomb within the limits (7000x7000 of zeros in 143 KB) decodes: a legal image', async () => {
  const png = pngAround(7000, 7000, await deflateRepeated(Buffer.alloc(1 + 7000 * 3), 7000));
  const t0 = Date.now();
  return { r: await sendImage(dataUrl(png)), bytes: png.length, ms: Date.now() - t0 };
}, ({ r, bytes, ms }) => {
  expectStatus(r, 200);
  console.log(`7000x7000 zlib bomb: ${bytes} bytes, 147 MB of pixels, answered in ${ms} ms`);
});

hostile('compressed data past the image (64x64 then 256 MB of zeros in the stream) is not inflated', async () => {
  const png = pngAround(64, 64, await deflateRepeated(Buffer.alloc(1 << 20), 256));
  const t0 = Date.now();
  return { r: await sendImage(dataUrl(png)), ms: Date.now() - t0 };
}, ({ r, ms }) => {
  expectStatus(r, [200, 400]);
  assert.ok(ms < 5000, `answered in ${ms} ms`);
});

for (const [what, name, type] of [
  ['a JPEG labelled image/png decodes as the JPEG it is', 'ok-16x16-jpeg-420.jpg', 'image/png'],
  ['a CMYK JPEG decodes', 'ok-8x8-jpeg-cmyk.jpg', 'image/jpeg'],
  ['an animated GIF gives its first frame', 'ok-2x1-gif-animated.gif', 'image/gif'],
  ['an animated WebP gives its first frame', 'ok-6x4-webp-animated.webp', 'image/webp'],
]) {
  hostile(what, () => sendImage(dataUrl(fixture(name), type)), (r) => expectStatus(r, 200));
}

// ---- URLs and data URLs ----
hostile('an http URL is refused: nothing is fetched', () => sendImage('http://127.0.0.1:9/cat.png'),
  (r) => expectStatus(r, 400, { says: /only data: URLs are accepted, not http\(s\) URLs/ }));
hostile('an https URL is refused', () => sendImage(fixture('bad-http.url').toString().trim()),
  (r) => expectStatus(r, 400, { says: /only data: URLs are accepted/ }));
for (const url of [`file://${path.join(fixtureDir, 'ok-8x6-png-rgb.png')}`, 'file:///etc/passwd', 'FILE:///proc/self/environ']) {
  hostile(`a file URL (${url.slice(0, 30)}…) is refused for HTTP clients`, () => sendImage(url),
    (r) => expectStatus(r, 400, { says: /only data: URLs are accepted/ }));
}
hostile('a javascript: URL is refused', () => sendImage('javascript:alert(document.domain)'),
  (r) => expectStatus(r, 400, { says: /only data: URLs are accepted/ }));
hostile('bad base64 is refused', () => sendImage(fixture('bad-base64.url').toString().trim()),
  (r) => expectStatus(r, 400, { says: /not a base64 character/ }));
hostile('base64url is refused, saying so', () => sendImage(small.replace(/,./, ',-')),
  (r) => expectStatus(r, 400, { says: /base64url is not accepted/ }));
hostile('a percent-encoded data URL is refused', () => sendImage('data:image/png,%89PNG%0D%0A%1A%0A'),
  (r) => expectStatus(r, 400, { says: /not base64/ }));
hostile('an empty data URL payload is refused', () => sendImage('data:image/png;base64,'),
  (r) => expectStatus(r, 400, { says: /empty payload/ }));
hostile('base64 with MIME line breaks and spaces decodes', () => {
  const [head, payload] = small.split(',');
  return sendImage(`${head},${payload.replace(/(.{16})/g, '$1\r\n').replace(/(.{7})/g, '$1 ')}`);
}, (r) => assert.equal(promptTokens(expectStatus(r, 200)), baseline));
hostile('a data URL over 20 MiB is refused before it is decoded', () => {
  const payload = 'A'.repeat(Math.ceil((MAX_IMAGE_BYTES + 1024) / 3) * 4);
  return sendImage(`data:image/png;base64,${payload}`);
}, (r, ms) => {
  expectStatus(r, 400, { says: /over the 20971520-byte limit/ });
  assert.ok(ms < 10000, `refused in ${ms} ms`);
});
hostile('a body over --max-body is a 413 and the connection closes', () =>
  send(withImages([imagePart(`data:image/png;base64,${'A'.repeat(MAX_BODY)}`)])),
(r) => {
  expectStatus(r, 413);
  assert.equal(r.closed, true);
});

// ---- the shape of image parts ----
hostile('17 images (over --max-images 16) are refused at the 17th', () => send(withImages(Array(17).fill(imagePart(small)))),
(r) => expectStatus(r, 400, { says: /at most 16 images per request/, param: 'messages[0].content[16]' }));
hostile('16 copies of one picture are fine (one tower run)', () => send(withImages(Array(16).fill(imagePart(small)))),
  (r) => expectStatus(r, 200));
for (const [what, part] of [
  ['url missing', { type: 'image_url', image_url: {} }],
  ['url a number', { type: 'image_url', image_url: { url: 7 } }],
  ['url an object', { type: 'image_url', image_url: { url: { url: small } } }],
  ['url null', { type: 'image_url', image_url: { url: null } }],
  ['image_url missing', { type: 'image_url' }],
  ['image_url an array', { type: 'image_url', image_url: [small] }],
]) {
  hostile(`an image part with ${what} is a 400`, () => send(withImages([part])),
    (r) => expectStatus(r, 400, { says: /must be a string/ }));
}
hostile('an image part of type "image" is read too', () => send(withImages([{ type: 'image', image: small }])),
  (r) => assert.equal(promptTokens(expectStatus(r, 200)), baseline));
for (const role of ['assistant', 'system']) {
  hostile(`an image in a ${role} message takes its positions where the template puts it`, async () => {
    const messages = (parts) => [
      ...(role === 'system' ? [{ role: 'system', content: [...parts, { type: 'text', text: 'Be brief.' }] }] : []),
      { role: 'user', content: 'Hello' },
      ...(role === 'assistant' ? [{ role: 'assistant', content: [...parts, { type: 'text', text: 'Hi.' }] },
        { role: 'user', content: 'And?' }] : []),
    ];
    const body = (parts) => ({ messages: messages(parts), max_tokens: 1, temperature: 0 });
    return [await send(body([imagePart(small)])), await send(body([]))];
  }, ([withImage, without]) => {
    assert.equal(promptTokens(expectStatus(withImage, 200)) - promptTokens(expectStatus(without, 200)), imageCost);
  });
}
hostile('a bad image in a streaming request is a 400 before any event', () =>
  sendImage(dataUrl(fixture('bad-png-truncated.png')), { stream: true }),
(r) => {
  const res = expectStatus(r, 400);
  assert.match(res.headers['content-type'], /^application\/json/);
});

// ---- load ----
hostile('8 requests at once, each with its own 5 MB image, all answered', async () => {
  const urls = Array.from({ length: 8 }, (_, i) => dataUrl(noisePng(1290, 1290, 100 + i)));
  const t0 = Date.now();
  const rs = await Promise.all(urls.map((u) => sendImage(u)));
  return { rs, ms: Date.now() - t0, mb: urls[0].length / 1e6 };
}, ({ rs, ms, mb }) => {
  for (const r of rs) expectStatus(r, 200);
  console.log(`8 parallel requests of ${mb.toFixed(1)} MB data URLs: ${ms} ms, peak RSS ${processState(pid).peakMiB.toFixed(0)} MiB`);
});
hostile('one request of 16 different 600x600 images', () =>
  send(withImages(Array.from({ length: 16 }, (_, i) => imagePart(dataUrl(noisePng(600, 600, 200 + i)))))),
(r) => expectStatus(r, 200));

// Clients that upload image-sized bodies and stall before the end: each body is held while it
// is read (up to --max-body, 32 MiB with a tower, and a slow client may take minutes). The
// server holds at most BODIES_HELD_MIB of bodies at once; past that a body gets a 503.
const BODIES_HELD_MIB = 256;
hostile(`16 clients stalling in 30 MiB uploads: at most ${BODIES_HELD_MIB} MiB of bodies are held, the rest get 503`, async () => {
  const n = 16, declared = 31 << 20, sent = 30 << 20;
  const prefix = '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,';
  const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`;
  const payload = Buffer.concat([Buffer.from(head + prefix), Buffer.alloc(sent - prefix.length, 'A')]);
  const before = processState(pid).rssMiB;
  const answers = Array(n).fill('');
  const socks = [];
  let written = 0;
  await Promise.all(Array.from({ length: n }, (_, i) => new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(payload, () => { ++written; resolve(); }));
    s.on('data', (d) => { answers[i] += d.toString('latin1'); });
    s.on('error', () => resolve());
    s.on('close', () => resolve());
    socks.push(s);
  })));
  let peak = 0;
  for (let t = 0; t < 20; ++t) {  // 1 s: what the server reads, it holds
    peak = Math.max(peak, processState(pid).rssMiB);
    await new Promise((r) => setTimeout(r, 50));
  }
  for (const s of socks) s.destroy();
  return { before, peak, written, statuses: answers.map((a) => Number(/^HTTP\/1\.1 (\d+)/.exec(a)?.[1] ?? 0)) };
}, ({ before, peak, written, statuses }) => {
  console.log(`stalled uploads: ${written} of 16 x 30 MiB written, RSS ${before.toFixed(0)} -> ${peak.toFixed(0)} MiB, ` +
    `answers ${statuses.map((s) => s || '-').join(',')}`);
  assert.ok(peak - before < BODIES_HELD_MIB + 64, `the bodies took ${(peak - before).toFixed(0)} MiB`);
  assert.ok(statuses.filter((s) => s === 503).length >= 16 - Math.floor(BODIES_HELD_MIB / 30),
    `the uploads past the budget were refused: ${statuses}`);
  assert.ok(statuses.every((s) => s === 0 || s === 503), `${statuses}`);
});

test('after every case the server still answers an image, within its memory bound', async () => {
  assert.equal(promptTokens(expectStatus(await sendImage(small), 200)), baseline);
  const st = processState(pid);
  assert.ok(st.alive);
  console.log(`hostile images: ${ledger.length} cases, server RSS ${st.rssMiB.toFixed(0)} MiB, peak (VmHWM) ` +
    `${st.peakMiB.toFixed(0)} MiB (bound ${RSS_LIMIT_MIB} MiB), slowest /health ${Math.max(...ledger.map((l) => l.health_ms))} ms`);
  assert.ok(st.peakMiB < RSS_LIMIT_MIB, `peak RSS ${st.peakMiB.toFixed(0)} MiB over the ${RSS_LIMIT_MIB} MiB bound`);
});

after(() => {
  for (const l of ledger) if (l.ms > 1000) console.log(`  ${l.ms} ms, RSS ${l.rss_mib} MiB, peak ${l.peak_mib} MiB: ${l.name}`);
});
