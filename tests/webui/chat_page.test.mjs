// The chat page of `k3 serve` in a real browser (run.sh starts the server with scripted
// answers, taken in turn: 0 reasoning + markdown, 1 a long answer, 2 a tool call, 3 an XSS
// payload). The tests run in order and share one page, as a user would.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const base = process.env.K3_BASE;
const key = process.env.K3_KEY;
const shots = process.env.K3_SCREENSHOTS || '';
assert.ok(base && key, 'K3_BASE and K3_KEY must be set (run.sh sets them)');

let browser;
let page;
const dialogs = [];
const pageErrors = [];
const requests = [];  // bodies of the chat requests the page sent

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
  page = await context.newPage();
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) requests.push(JSON.parse(r.postData())); });
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

test('the page raised no script errors', () => {
  assert.deepEqual(pageErrors, []);
});
