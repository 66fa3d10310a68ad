// tests/e2e/vision_openai.test.mjs: images through the official `openai` client against a real
// `k3 serve --mmproj` (run.sh: the embedded k3-tiny with a tower, K3_MMPROJ; the synthetic
// tests/data/vision/mmproj-vt-a.gguf answers nonsense, so what is checked is the plumbing: data
// URLs in image_url parts, streaming and not, the prompt positions an image takes, and the
// prompt cache keyed by the picture). With K3_VISION_TRAINED=1 (a tower trained to answer
// "what colour is the circle?") the answer itself is checked too. Needs K3_BASE_URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { circlePng, dataUrl, fixture, imagePart, noisePng, visionDir } from './images.mjs';

const baseURL = process.env.K3_BASE_URL;
assert.ok(baseURL, 'K3_BASE_URL must be set (run.sh sets it)');
const root = baseURL.replace(/\/v1$/, '');
const trained = process.env.K3_VISION_TRAINED === '1';
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });

const sq56 = dataUrl(fs.readFileSync(path.join(visionDir, 'sq56.png')));
const question = (url, text = 'What colour is the circle?') =>
  [{ role: 'user', content: url ? [imagePart(url), { type: 'text', text }] : text }];
// Greedy, short, and with an owner of its own so no other test's snapshot is reused.
const ask = (messages, extra = {}) =>
  client.chat.completions.create({ model: 'k3', messages, max_tokens: 4, temperature: 0, user: 'vision-e2e', ...extra });

async function post(pathname, body) {
  const r = await fetch(`${root}${pathname}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(r.status, 200, pathname);
  return r.json();
}

// Where the image of the conversation's first user message starts: the tokens of the rendered
// prompt before its placeholder (the placeholder becomes <|media_begin|>, the rows, <|media_end|>).
async function imageStart(messages) {
  const { prompt } = await post('/apply-template', { messages });
  const cut = prompt.indexOf('<|kimi_image_placeholder|>');
  assert.ok(cut > 0, 'the template renders the image part');
  return (await post('/tokenize', { content: prompt.slice(0, cut), parse_special: true })).tokens.length;
}

let tower;  // the tower's file name, as /v1/models gives it
test('the model lists multimodal, with the image limits', async () => {
  const models = await client.models.list();
  const m = models.data[0];
  tower = m.meta.vision.mmproj;
  assert.deepEqual(m.capabilities, ['completion', 'multimodal']);
  const lim = m.meta.vision.image_limits;
  assert.equal(lim.max_bytes, 20 * 1024 * 1024);
  assert.equal(lim.max_images, 16);
  assert.ok(lim.max_side > 0 && lim.max_pixels > 0);
  const props = await (await fetch(`${root}/props`)).json();
  assert.equal(props.modalities.vision, true);
});

let textOnly, withImage;
test('non-streaming: an image adds its positions to prompt_tokens', async () => {
  textOnly = await ask(question(null));
  withImage = await ask(question(sq56));
  assert.equal(withImage.object, 'chat.completion');
  assert.ok(['stop', 'length'].includes(withImage.choices[0].finish_reason));
  // sq56 (56 x 56) through vt-a (patch 14, merge 2): 2 x 2 rows, plus <|media_begin|> and
  // <|media_end|>; the image part itself renders as nothing else. Another tower: some rows.
  const grew = withImage.usage.prompt_tokens - textOnly.usage.prompt_tokens;
  if (tower === 'mmproj-vt-a.gguf') assert.equal(grew, 6, 'sq56 takes 4 rows and the 2 media markers');
  else assert.ok(grew > 2, `the image took ${grew} positions`);
  assert.equal(withImage.usage.total_tokens, withImage.usage.prompt_tokens + withImage.usage.completion_tokens);
});

test('streaming: the same answer and usage as non-streaming', async () => {
  const stream = await ask(question(sq56), { stream: true, stream_options: { include_usage: true } });
  let content = '', reasoning = '', usage = null, finish = null;
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta;
    if (d?.content) content += d.content;
    if (d?.reasoning_content) reasoning += d.reasoning_content;
    if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(content, withImage.choices[0].message.content);
  assert.equal(reasoning, withImage.choices[0].message.reasoning_content ?? '');
  assert.equal(finish, withImage.choices[0].finish_reason);
  assert.equal(usage.prompt_tokens, withImage.usage.prompt_tokens);
});

test('the same picture again resumes past it; a different picture of the same size does not', async () => {
  const red = dataUrl(circlePng(112));
  const blue = dataUrl(circlePng(112, [30, 30, 220]));
  // One slot keeps one snapshot: nothing else runs between the turns of the conversation.
  const rows = (await ask(question(red))).usage.prompt_tokens - textOnly.usage.prompt_tokens - 2;
  assert.ok(rows > 0, `${rows} image rows`);
  const first = await ask(question(red), { user: 'vision-cache' });
  const answer = { role: 'assistant', content: first.choices[0].message.content || 'ok' };
  const followUp = (url) => [...question(url), answer, { role: 'user', content: 'Are you sure?' }];
  const start = await imageStart(followUp(red));
  const again = await ask(followUp(red), { user: 'vision-cache' });
  const cachedAgain = again.usage.prompt_tokens_details.cached_tokens;
  assert.ok(cachedAgain >= start + rows + 2,
    `the follow-up reuses the prompt past the picture (cached ${cachedAgain}, the image ends at ${start + rows + 2})`);
  const other = await ask(followUp(blue), { user: 'vision-cache' });
  const cachedOther = other.usage.prompt_tokens_details.cached_tokens;
  assert.ok(cachedOther <= start + 1,
    `another picture is another prompt from its first row on (cached ${cachedOther}, the rows start at ${start + 1})`);
  assert.equal(other.usage.prompt_tokens, again.usage.prompt_tokens, 'the same size takes the same positions');
  console.log(`prompt cache: image at ${start}..${start + rows + 2}, same picture cached ${cachedAgain} of ${again.usage.prompt_tokens}, other picture cached ${cachedOther}`);
});

test('PNG, JPEG, WebP and GIF data URLs, and an image_url given as a string', async () => {
  for (const [name, type] of [['ok-16x16-jpeg-420.jpg', 'image/jpeg'], ['ok-8x6-webp-lossless.webp', 'image/webp'],
    ['ok-8x6-gif.gif', 'image/gif'], ['ok-8x8-jpeg-cmyk.jpg', 'image/jpeg']]) {
    const r = await ask(question(dataUrl(fixture(name), type)));
    assert.ok(r.usage.prompt_tokens > textOnly.usage.prompt_tokens, name);
  }
  const r = await ask([{ role: 'user', content: [{ type: 'image_url', image_url: dataUrl(noisePng(40, 30)) }, { type: 'text', text: 'hi' }] }]);
  assert.ok(r.usage.prompt_tokens > 0);
});

test('a remote URL and a broken image are 400s naming the part, streaming or not', async () => {
  for (const stream of [false, true]) {
    for (const [url, says] of [['https://example.com/cat.png', /only data: URLs are accepted/],
      [dataUrl(fixture('bad-png-truncated.png')), /PNG/]]) {
      await assert.rejects(ask([{ role: 'user', content: [{ type: 'text', text: 'look' }, imagePart(url)] }], { stream }),
        (e) => {
          assert.equal(e.status, 400);
          assert.match(e.message, /messages\[0\]\.content\[1\]/);
          assert.match(e.message, says);
          return true;
        });
    }
  }
});

test('the trained tower sees the red circle', { skip: !trained && 'no trained tower (K3_VISION_TRAINED)' }, async () => {
  const r = await ask(question(dataUrl(circlePng(96))), { max_tokens: 256 });
  const m = r.choices[0].message;
  assert.match(`${m.reasoning_content ?? ''} ${m.content}`, /\bred\b/i);
});
