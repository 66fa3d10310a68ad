// The chat page of `k3 serve` in a real browser (run.sh starts the server with scripted
// answers, taken in turn: 0 reasoning + markdown, 1 a long answer, 2 a tool call, 3 an XSS
// payload, 4 elements named like the page's controls, 5 and 6 short answers, 7 media from
// another host, 8 a long answer). The tests run in order and share one page, as a user would.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const base = process.env.K3_BASE;
const key = process.env.K3_KEY;
const shots = process.env.K3_SCREENSHOTS || '';
const answerCount = Number(process.env.K3_ANSWERS);
assert.ok(base && key && answerCount > 0, 'K3_BASE, K3_KEY and K3_ANSWERS must be set (run.sh sets them)');

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

async function screenshot(name) {
  if (!shots) return;
  fs.mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, name) });
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

test('the page raised no script errors', () => {
  assert.deepEqual(pageErrors, []);
});
