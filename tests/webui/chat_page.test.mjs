// The chat page of `k3 serve` in a real browser (run.sh starts the server with scripted
// answers, taken in turn: 0 reasoning + markdown, 1 a long answer, 2 a tool call, 3 an XSS
// payload, 4 elements named like the page's controls, 5 and 6 short answers, 7 media from
// another host, 8 a long answer). The tests run in order and share one page, as a user would.
// The images tests at the end use a second server, K3_VISION_BASE: the embedded k3-tiny with a
// vision tower (the same key); with K3_VISION_TRAINED=1 its tower is trained and the answer
// about a red circle must say red, else only the plumbing is checked.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { circlePng, dataUrl, fixture, noisePng } from '../e2e/images.mjs';

const base = process.env.K3_BASE;
const key = process.env.K3_KEY;
const shots = process.env.K3_SCREENSHOTS || '';
const answerCount = Number(process.env.K3_ANSWERS);
const visionBase = process.env.K3_VISION_BASE;
const visionTrained = process.env.K3_VISION_TRAINED === '1';
assert.ok(base && key && answerCount > 0 && visionBase,
  'K3_BASE, K3_KEY, K3_ANSWERS and K3_VISION_BASE must be set (run.sh sets them)');

let browser;
let page;
const dialogs = [];
const pageErrors = [];
const requests = [];  // bodies of the chat requests the page sent
const requestAuth = [];  // their Authorization headers (undefined: none)

// The server gives its i-th generation answer i mod answerCount. A test that wants a given
// answer first moves the count there with throwaway one-token requests, so a test that fails
// half-way does not hand the wrong answers to the tests after it.
let answersUsed = 0;
function countAnswers(context) {
  context.on('response', (r) => {
    if (r.url().endsWith('/v1/chat/completions') && r.status() === 200) ++answersUsed;
  });
}
async function nextAnswerIs(index) {
  while (answersUsed % answerCount !== index) {
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'skip' }], max_tokens: 1 }),
    });
    await res.text();
    assert.equal(res.status, 200);
    ++answersUsed;
  }
}

async function screenshot(name, p = page) {
  if (!shots) return;
  fs.mkdirSync(shots, { recursive: true });
  await p.screenshot({ path: path.join(shots, name) });
}

const lastAssistant = () => page.locator('.msg.assistant').last();

async function sendMessage(text) {
  await page.fill('#input', text);
  await page.press('#input', 'Enter');
}

async function waitIdle() {
  await page.waitForSelector('#send:not([hidden])', { timeout: 20000 });
}

before(async () => {
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1100, height: 720 } });
  countAnswers(context);
  page = await context.newPage();
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('request', (r) => {
    if (!r.url().endsWith('/v1/chat/completions')) return;
    requests.push(JSON.parse(r.postData()));
    requestAuth.push(r.headers().authorization);
  });
});

after(async () => {
  await browser?.close();
});

test('the page is served with a strict CSP and no key needed for its files', async () => {
  const res = await fetch(`${base}/`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/html/);
  const csp = res.headers.get('content-security-policy');
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline/);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  for (const asset of ['chat.js', 'chat.css', 'marked.min.js', 'purify.min.js']) {
    const r = await fetch(`${base}/assets/${asset}`);
    assert.equal(r.status, 200, asset);
  }
  // The API itself still wants the key.
  assert.equal((await fetch(`${base}/props`)).status, 401);
});

test('asks for the API key, refuses a wrong one, then shows the server props', async () => {
  await page.goto(`${base}/`);
  await page.waitForSelector('#key-dialog[open]');
  await page.fill('#key-input', 'wrong-key');
  await page.click('#key-ok');
  await page.waitForSelector('#key-error:not([hidden])');
  await page.fill('#key-input', key);
  await page.click('#key-ok');
  await page.waitForFunction(() => document.getElementById('prop-slots').textContent === '1');
  assert.match(await page.textContent('#prop-ctx'), /4096 tokens/);
  assert.equal(await page.textContent('#prop-model'), 'small-q8_0');
});

test('a message streams an answer with a reasoning block and rendered markdown', async () => {
  await sendMessage('Hello there');
  await waitIdle();
  const msg = lastAssistant();
  assert.equal(await msg.locator('.body strong').textContent(), 'world');
  assert.equal((await msg.locator('.body pre code').textContent()).trim(), 'print(42)');
  const reasoning = msg.locator('details.reasoning');
  assert.equal(await reasoning.count(), 1);
  assert.equal(await reasoning.locator('.reasoning-text').textContent(), 'Let me think about greeting.');
  assert.equal(await reasoning.evaluate((d) => d.open), false, 'folded once the answer is done');
  assert.match(await page.textContent('#speed'), /tok\/s/);
  assert.equal(await page.textContent('#conv-title'), 'Hello there');
  await screenshot('webui-chat.png');
});

test('a long answer streams in pieces and Stop ends it mid-answer', async () => {
  await sendMessage('Tell me a long story');
  const body = lastAssistant().locator('.body');
  const seen = new Set();
  const t0 = Date.now();
  while (seen.size < 3 && Date.now() - t0 < 15000) {
    const n = (await body.textContent()).length;
    if (n > 0) seen.add(n);
    await page.waitForTimeout(30);
  }
  assert.ok(seen.size >= 3, `the answer grew while streaming (lengths seen: ${[...seen]})`);
  await page.click('#stop');
  await waitIdle();
  const stopped = (await body.textContent()).length;
  await page.waitForTimeout(500);
  assert.equal((await body.textContent()).length, stopped, 'nothing arrives after Stop');
  assert.ok(stopped < 1500 * 6, `stopped before the end (${stopped} chars)`);
  assert.equal(await lastAssistant().locator('.note').textContent(), 'stopped');
  // The server noticed the client leaving and freed the slot.
  let cancelled = false;
  for (let i = 0; i < 100 && !cancelled; ++i) {
    const m = await (await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${key}` } })).text();
    cancelled = /^k3_requests_cancelled_total [1-9]/m.test(m) && /^k3_requests_processing 0/m.test(m);
    if (!cancelled) await page.waitForTimeout(100);
  }
  assert.ok(cancelled, 'the server cancelled the stopped generation');
});

test('after a reload the conversation is still there', async () => {
  await page.reload();
  await page.waitForFunction(() => document.getElementById('prop-slots').textContent === '1');
  assert.equal(await page.locator('#conv-list li').count(), 1);
  assert.equal(await page.locator('.msg').count(), 4);
  assert.equal(await page.locator('.msg.user .body').first().textContent(), 'Hello there');
  assert.equal(await page.locator('.msg.assistant .body strong').first().textContent(), 'world');
  assert.equal(await page.locator('details.reasoning').count(), 2);
  assert.equal(await lastAssistant().locator('.note').textContent(), 'stopped');
  assert.equal(await page.locator('#key-dialog[open]').count(), 0, 'the key was remembered');
});

test('a tool call is shown, and the history goes back to the server', async () => {
  await page.click('#settings-toggle');
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'number' } }, required: ['city'] } } }];
  await page.fill('#set-tools', JSON.stringify(tools));
  await page.dispatchEvent('#set-tools', 'change');
  await page.fill('#set-system', 'You are terse.');
  await page.dispatchEvent('#set-system', 'change');
  await page.click('#settings-toggle');
  const before = requests.length;
  await sendMessage('Weather in Paris?');
  await waitIdle();
  const call = lastAssistant().locator('.tool-call');
  assert.equal(await call.count(), 1);
  assert.equal(await call.locator('.tool-name').textContent(), 'tool call: get_weather');
  assert.deepEqual(JSON.parse(await call.locator('pre').textContent()), { city: 'Paris', days: 2 });
  const sent = requests[before];
  assert.deepEqual(sent.messages.map((m) => m.role), ['system', 'user', 'assistant', 'user', 'assistant', 'user']);
  assert.equal(sent.messages[0].content, 'You are terse.');
  assert.equal(sent.messages[2].reasoning_content, 'Let me think about greeting.');
  assert.equal(sent.tools[0].function.name, 'get_weather');
  await screenshot('webui-tool-call.png');
});

test('markup in model output is rendered inert', async () => {
  await page.click('#new-chat');
  await sendMessage('Show me HTML');
  await waitIdle();
  await page.waitForTimeout(300);  // let any handler that survived fire
  const msg = lastAssistant();
  assert.match(await msg.locator('.body').textContent(), /end of payload/);
  // The reasoning's markup is text.
  assert.match(await msg.locator('.reasoning-text').textContent(), /<img src=x onerror=/);
  const found = await page.evaluate(() => {
    const box = document.getElementById('messages');
    const bad = [...box.querySelectorAll('script, img, iframe, svg, object, embed, style')].map((e) => e.tagName);
    for (const e of box.querySelectorAll('*'))
      for (const a of e.attributes) if (a.name.startsWith('on') || /^\s*javascript:/i.test(a.value)) bad.push(`${e.tagName}[${a.name}]`);
    return { bad, xss: window.__xss ?? null };
  });
  assert.deepEqual(found, { bad: [], xss: null });
  assert.deepEqual(dialogs, []);
  assert.equal(await page.locator('#conv-list li').count(), 2);
  await screenshot('webui-xss-inert.png');
});

// The page's own controls, by where they are (an answer's elements are inside #messages).
const real = {
  input: '#composer > textarea#input',
  send: '#composer > button#send',
  stop: '#composer > button#stop',
  keyInput: 'dialog#key-dialog > input#key-input',
  keyOk: 'dialog#key-dialog > button#key-ok',
};

const lastAssistantText = () => page.evaluate(() =>
  [...document.querySelectorAll('#messages .msg.assistant .body')].pop()?.textContent ?? '');

test('an answer cannot take over the page\'s controls (DOM clobbering)', async () => {
  await nextAnswerIs(4);
  await page.click('#new-chat');
  await sendMessage('Clobber the page');
  await page.waitForFunction(() =>
    [...document.querySelectorAll('#messages .msg.assistant .body')].pop()?.textContent.includes('end of clobber'));
  await page.waitForSelector(`${real.send}:not([hidden])`, { timeout: 5000 });
  assert.equal(await page.isHidden(real.stop), true, 'Stop is hidden once the answer is done');
  // The answer's elements are there, but nothing in it has an id or a name.
  const named = await page.evaluate(() => document.querySelectorAll('#messages [id], #messages [name]').length);
  assert.equal(named, 0);
  assert.equal(await page.evaluate(() => document.getElementById('input')?.tagName), 'TEXTAREA');

  // What the user types is what is sent.
  const typed = 'what the user really typed';
  let before = requests.length;
  await page.fill(real.input, typed);
  await page.press(real.input, 'Enter');
  await page.waitForSelector(`${real.stop}:not([hidden])`, { timeout: 5000 });
  await page.waitForSelector(`${real.send}:not([hidden])`, { timeout: 20000 });
  assert.equal(requests[before].messages.at(-1).content, typed);
  assert.match(await lastAssistantText(), /Noted\./);
  assert.equal(await page.inputValue(real.input), '', 'the composer was cleared');

  // The key dialog still reads its own field and button.
  await page.click('#settings-toggle');
  await page.click('#forget-key');
  await page.click('#settings-toggle');
  before = requests.length;
  await page.fill(real.input, 'after forgetting the key');
  await page.press(real.input, 'Enter');
  await page.waitForSelector('dialog#key-dialog[open]', { timeout: 5000 });
  await page.fill(real.keyInput, key);
  await page.click(real.keyOk);
  await page.waitForSelector(`${real.send}:not([hidden])`, { timeout: 20000 });
  assert.equal(await page.locator('dialog#key-dialog[open]').count(), 0, 'the key was accepted');
  assert.deepEqual(requestAuth.slice(before), [undefined, `Bearer ${key}`]);
  assert.equal(requests.at(-1).messages.at(-1).content, 'after forgetting the key');
  assert.match(await lastAssistantText(), /Key accepted\./);
});

test('an answer with media elements makes the browser fetch nothing from another host', async () => {
  // A page of its own with the CSP switched off: the sanitiser alone must keep every load
  // away (with the CSP on, a load it blocks is never seen as a request). Every request
  // that is not to the server is counted and aborted, so nothing leaves the machine.
  await nextAnswerIs(7);
  const context = await browser.newContext({ bypassCSP: true, viewport: { width: 1100, height: 720 } });
  countAnswers(context);
  try {
    await context.addInitScript((k) => {
      localStorage.setItem('k3chat.apiKey', JSON.stringify(k));
      localStorage.setItem('k3chat.settings', JSON.stringify({ max_tokens: 3000 }));  // the answer is long
    }, key);
    const elsewhere = [];
    await context.route('**/*', (route) => {
      if (new URL(route.request().url()).origin === base) return route.continue();
      elsewhere.push(route.request().url());
      return route.abort();
    });
    const media = await context.newPage();
    const errors = [];
    media.on('pageerror', (e) => errors.push(String(e)));
    await media.goto(`${base}/`);
    await media.waitForFunction(() => document.getElementById('prop-slots').textContent === '1');
    await media.fill('#input', 'Show me media');
    await media.press('#input', 'Enter');
    await media.waitForFunction(() => document.querySelector('#messages .msg.assistant .body')?.textContent.includes('end of media'));
    await media.waitForSelector('#send:not([hidden])', { timeout: 20000 });
    // More re-renders of the same answer: another conversation and back, then a reload.
    await media.click('#new-chat');
    await media.click('#conv-list .conv-open');
    await media.reload();
    await media.waitForFunction(() => document.querySelector('#messages .msg.assistant .body')?.textContent.includes('end of media'));
    await media.waitForTimeout(1000);  // time for any load a rendered element would start
    const left = await media.evaluate(() => {
      const box = document.getElementById('messages');
      const tags = [...box.querySelectorAll('img, picture, video, audio, source, track, embed, object, iframe, frame, link, svg, input, form, button, table[background], [style]')]
        .map((e) => e.tagName);
      const attrs = [];
      for (const e of box.querySelectorAll('*'))
        for (const a of e.attributes) if (['src', 'srcset', 'poster', 'background', 'data', 'formaction', 'action', 'style'].includes(a.name)) attrs.push(`${e.tagName}[${a.name}]`);
      return { tags, attrs };
    });
    assert.equal(elsewhere.length, 0, `${elsewhere.length} requests to another host: ${[...new Set(elsewhere)].join(' ')}`);
    assert.deepEqual(left, { tags: [], attrs: [] });
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('a reload in the middle of an answer keeps every chunk that had arrived', async () => {
  // The page reloads as soon as it has shown the answer grow twice: the second piece came
  // after any save that the first could have triggered, and well within the second that a
  // save made at most once a second would leave unsaved.
  await nextAnswerIs(8);
  await page.click('#new-chat');
  await sendMessage('Another long story');
  let shown = '';
  for (let grown = 0, last = 0, t0 = Date.now(); grown < 2; await page.waitForTimeout(5)) {
    assert.ok(Date.now() - t0 < 20000, 'the answer streams');
    shown = (await lastAssistantText()).trim();
    if (/word\d/.test(shown) && shown.length > last) {
      ++grown;
      last = shown.length;
    }
  }
  await page.reload();
  await page.waitForFunction(() => document.getElementById('prop-slots').textContent === '1');
  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('k3chat.conversations')));
  const conv = stored.find((c) => c.title === 'Another long story');
  assert.ok(conv, 'the conversation was saved');
  const answer = conv.messages.at(-1);
  assert.equal(answer.role, 'assistant');
  assert.ok(shown.length > 0);
  assert.ok(answer.content.startsWith(shown),
    `all that was shown is kept: shown ${shown.length} chars (…${JSON.stringify(shown.slice(-30))}), stored ${answer.content.length}`);
  assert.equal(answer.reasoning_content, 'Thinking long.');
  assert.equal(answer.failed, undefined, 'a reload is not a failure');
  assert.equal(await lastAssistant().locator('.note').textContent(), 'interrupted');
  assert.equal((await lastAssistantText()).trim(), answer.content.trim(), 'the page shows what was kept');
});

// ---- images ----

// Hands the page a file as the browser would on a drop or a paste: an event built in the page
// around a DataTransfer holding it, dispatched at `selector`. Resolves to whether the page took
// the event from the browser (preventDefault).
function dispatchFile(p, kind, selector, bytes, name, type) {
  return p.evaluate(({ kind, selector, b64, name, type }) => {
    const data = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([data], name, { type }));
    const target = document.querySelector(selector);
    if (kind === 'paste') return !target.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    target.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    return !target.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, { kind, selector, b64: Buffer.from(bytes).toString('base64'), name, type });
}

const red = circlePng(96);
const blue = circlePng(96, [30, 40, 220]);
const noise = noisePng(64, 48, 5);

test('a server without a vision tower offers no images, and says so on a drop or a paste', async () => {
  assert.equal(await page.isHidden('#attach'), true, 'no Image button');
  const before = requests.length;
  for (const kind of ['drop', 'paste']) {
    await page.evaluate(() => { document.getElementById('error').hidden = true; });
    const taken = await dispatchFile(page, kind, kind === 'drop' ? '#composer' : '#input', red, 'circle.png', 'image/png');
    assert.equal(taken, true, `the ${kind} is taken from the browser`);
    await page.waitForSelector('#error:not([hidden])');
    assert.match(await page.textContent('#error'), /no vision tower/);
    assert.equal(await page.isHidden('#attachments'), true);
  }
  assert.equal(requests.length, before, 'nothing was sent');
});

let vpage;
const vrequests = [];  // bodies of the vision page's chat requests
const vLastAssistant = () => vpage.locator('.msg.assistant').last();
const vWaitIdle = () => vpage.waitForSelector('#send:not([hidden])', { timeout: 30000 });
const partsOf = (message) => (Array.isArray(message.content) ? message.content : []);
const imageUrls = (body) => body.messages.flatMap((m) => partsOf(m).filter((p) => p.type === 'image_url').map((p) => p.image_url.url));

async function vSend(text) {
  await vpage.fill('#input', text);
  await vpage.press('#input', 'Enter');
  await vWaitIdle();
}

test('with a vision tower, the Image button attaches a picture, and the request carries it as a data URL', async () => {
  const context = await browser.newContext({ viewport: { width: 1100, height: 720 } });
  await context.addInitScript(({ k, trained }) => {
    localStorage.setItem('k3chat.apiKey', JSON.stringify(k));
    localStorage.setItem('k3chat.settings', JSON.stringify({ temperature: 0, max_tokens: trained ? 256 : 8 }));
  }, { k: key, trained: visionTrained });
  vpage = await context.newPage();
  vpage.on('pageerror', (e) => pageErrors.push(`vision page: ${e}`));
  vpage.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) vrequests.push(JSON.parse(r.postData())); });
  await vpage.goto(`${visionBase}/`);
  await vpage.waitForSelector('#attach:not([hidden])');
  assert.equal(await vpage.textContent('#prop-model'), 'k3-tiny');

  await vpage.setInputFiles('#attach-input', [{ name: 'circle.png', mimeType: 'image/png', buffer: red },
    { name: 'blue.png', mimeType: 'image/png', buffer: blue }]);
  await vpage.waitForFunction(() => document.querySelectorAll('#attachments .attachment img.thumb').length === 2);
  assert.match(await vpage.getAttribute('#attachments img.thumb', 'src'), /^data:image\/jpeg;base64,/);
  await vpage.click('#attachments .attachment:nth-child(2) .attachment-remove');
  assert.equal(await vpage.locator('#attachments .attachment').count(), 1, 'a removed attachment is gone');
  assert.equal(await vpage.getAttribute('#attachments img.thumb', 'alt'), 'circle.png');
  await screenshot('webui-image-attached.png', vpage);

  const question = 'What colour is the circle?';
  await vSend(question);
  const sent = vrequests.at(-1);
  assert.deepEqual(sent.messages.at(-1).content, [{ type: 'image_url', image_url: { url: dataUrl(red) } }, { type: 'text', text: question }]);
  assert.equal(await vpage.isHidden('#attachments'), true, 'the attachments went with the message');
  assert.equal(await vpage.locator('.msg.user .images img.thumb').count(), 1);
  assert.equal(await vLastAssistant().locator('.note.failed').count(), 0, 'the answer came');
  const answer = await vLastAssistant().textContent();
  if (visionTrained) assert.match(answer, /\bred\b/i, `the trained tower sees red: ${answer}`);
  // The server saw the picture: the same request takes more prompt positions than its text alone.
  const usage = async (messages) => {
    const r = await fetch(`${visionBase}/v1/chat/completions`, {
      method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages, max_tokens: 1 }),
    });
    assert.equal(r.status, 200);
    return (await r.json()).usage.prompt_tokens;
  };
  const seen = await usage(sent.messages);
  const textOnly = await usage([{ role: 'user', content: question }]);
  assert.ok(seen > textOnly + 2, `the image took prompt positions (${seen} vs ${textOnly})`);
  await screenshot('webui-image-sent.png', vpage);
});

test('a pasted and a dropped image are attached too, and every picture is sent each turn', async () => {
  assert.equal(await dispatchFile(vpage, 'paste', '#input', blue, 'blue.png', 'image/png'), true);
  await vpage.waitForFunction(() => document.querySelectorAll('#attachments .attachment').length === 1);
  assert.equal(await dispatchFile(vpage, 'drop', '#composer', noise, 'noise.png', ''), true);
  await vpage.waitForFunction(() => document.querySelectorAll('#attachments .attachment').length === 2);
  await vSend('And these two?');
  const sent = vrequests.at(-1);
  assert.deepEqual(imageUrls(sent), [dataUrl(red), dataUrl(blue), dataUrl(noise)], 'the history\'s picture and the new ones');
  assert.deepEqual(partsOf(sent.messages.at(-1)).map((p) => p.type), ['image_url', 'image_url', 'text']);
  assert.deepEqual(await vpage.locator('.msg.user').evaluateAll((ms) => ms.map((m) => m.querySelectorAll('img.thumb').length)), [1, 2]);
});

test('after a reload the thumbnails are there and the pictures are sent again', async () => {
  await vpage.reload();
  await vpage.waitForSelector('#attach:not([hidden])');
  assert.equal(await vpage.locator('.msg.user .images img.thumb').count(), 3);
  const stored = await vpage.evaluate(() => localStorage.getItem('k3chat.conversations'));
  assert.ok(stored.length < 64 * 1024, `localStorage keeps thumbnails, not the pictures (${stored.length} chars)`);
  const images = JSON.parse(stored)[0].messages.flatMap((m) => m.images ?? []);
  assert.deepEqual(images.map((i) => i.name), ['circle.png', 'blue.png', 'noise.png']);
  assert.ok(images.every((i) => i.id && i.thumb.startsWith('data:image/jpeg;base64,') && i.url === undefined));
  await vSend('One more question.');
  assert.deepEqual(imageUrls(vrequests.at(-1)), [dataUrl(red), dataUrl(blue), dataUrl(noise)], 'resent from IndexedDB');
  assert.equal(await vLastAssistant().locator('.note.failed').count(), 0);
});

test('the page refuses what the server would: too large, not an image, past the image limit', async () => {
  await vpage.click('#new-chat');
  const before = vrequests.length;
  // From a file, which the browser reads itself: a 21 MiB buffer would cross the protocol as base64.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'k3-webui-'));
  const big = path.join(dir, 'huge.png');
  fs.writeFileSync(big, red);
  fs.truncateSync(big, 21 << 20);
  await vpage.setInputFiles('#attach-input', big);
  fs.rmSync(dir, { recursive: true });
  await vpage.waitForFunction(() => /huge\.png: 21 MiB, over this server's 20 MiB per image/.test(document.getElementById('error').textContent));
  await vpage.setInputFiles('#attach-input', { name: 'notes.png', mimeType: 'image/png', buffer: Buffer.from('just text') });
  await vpage.waitForFunction(() => /notes\.png: not a PNG, JPEG, WebP or GIF image/.test(document.getElementById('error').textContent));
  assert.equal(await vpage.locator('#attachments .attachment').count(), 0);
  const many = Array.from({ length: 17 }, (_, i) => ({ name: `n${i}.png`, mimeType: 'image/png', buffer: noisePng(8, 8, 50 + i) }));
  await vpage.setInputFiles('#attach-input', many);
  await vpage.waitForFunction(() => /n16\.png: a request carries at most 16 images/.test(document.getElementById('error').textContent));
  assert.equal(await vpage.locator('#attachments .attachment').count(), 16);
  while (await vpage.locator('#attachments .attachment').count()) await vpage.click('#attachments .attachment-remove');
  assert.equal(vrequests.length, before, 'nothing was sent');
});

test('an image the server refuses is shown in the conversation and not sent again', async () => {
  // 130 progressive scans: a browser shows it, k3 serve refuses it (more than 100 scans).
  const scans = fixture('bad-jpeg-130-scans.jpg');
  await vpage.setInputFiles('#attach-input', { name: 'scans.jpg', mimeType: 'image/jpeg', buffer: scans });
  await vpage.waitForSelector('#attachments .attachment');
  await vSend('Look at this');
  const note = vLastAssistant().locator('.note.failed');
  assert.match(await note.textContent(), /^refused: messages\[0\]\.content\[0\]: image: JPEG has more than 100 scans.*not sent again/);
  await vSend('Are you there?');
  assert.deepEqual(vrequests.at(-1).messages.map((m) => m.content), ['Are you there?'], 'the refused turn is left out');
  assert.equal(await vLastAssistant().locator('.note.failed').count(), 0);
});

test('deleting a conversation deletes its pictures from the browser', async () => {
  const count = () => vpage.evaluate(() => new Promise((resolve, reject) => {
    const open = indexedDB.open('k3chat');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const req = open.result.transaction('images').objectStore('images').count();
      req.onsuccess = () => { resolve(req.result); open.result.close(); };
    };
  }));
  assert.equal(await count(), 4, 'three pictures of the first conversation and the refused one');
  await vpage.click('#conv-list li:nth-child(2) .conv-delete');  // the first conversation (newest first)
  await vpage.waitForFunction(() => document.querySelectorAll('#conv-list li').length === 1);
  for (let i = 0; i < 50 && await count() !== 1; ++i) await vpage.waitForTimeout(20);
  assert.equal(await count(), 1);
  await vpage.context().close();
});

test('the page raised no script errors', () => {
  assert.deepEqual(pageErrors, []);
});
