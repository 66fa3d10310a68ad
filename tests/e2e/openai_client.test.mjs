// tests/e2e/openai_client.test.mjs: the official `openai` client against a real `k3 serve`
// (started by run.sh with a scripted output, so the answers are exact). Needs K3_BASE_URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: process.env.K3_BASE_URL, apiKey: 'e2e-key', maxRetries: 0 });
const tools = [{
  type: 'function',
  function: {
    name: 'get_weather', description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'number' } }, required: ['city'] },
  },
}];
// run.sh's script file answers request i with script i % 3: a plain turn, a tool call, the
// answer after the tool result. Tests run in order and each consumes the scripts it expects.
const question = [{ role: 'user', content: 'Weather in Paris?' }];

test('models lists the served model', async () => {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  assert.equal(models.data[0].object, 'model');
});

test('non-streaming chat: reasoning, content, usage', async () => {
  const r = await client.chat.completions.create({ model: 'k3', messages: question, max_tokens: 400 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.choices[0].message.content, 'Hello <world> | done');
  assert.equal(r.choices[0].message.reasoning_content, 'Let me think.');
  assert.ok(r.usage.prompt_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

let toolMessage;
test('streaming tool call with usage', async () => {
  const stream = await client.chat.completions.create({
    model: 'k3', messages: question, tools, stream: true, stream_options: { include_usage: true },
  });
  let reasoning = '', content = '', finish = null, usage = null;
  const calls = [];
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    if (!chunk.choices.length) continue;
    const d = chunk.choices[0].delta;
    if (d.reasoning_content) reasoning += d.reasoning_content;
    if (d.content) content += d.content;
    for (const tc of d.tool_calls ?? []) {
      if (!calls[tc.index]) calls[tc.index] = { id: tc.id, type: 'function', function: { name: tc.function.name, arguments: '' } };
      calls[tc.index].function.arguments += tc.function.arguments ?? '';
    }
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.equal(reasoning, 'Need weather.');
  assert.equal(content, '');
  assert.equal(finish, 'tool_calls');
  assert.equal(calls.length, 1);
  assert.equal(calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(calls[0].function.arguments), { city: 'Par"is\n', days: 2 });
  assert.ok(usage && usage.completion_tokens > 0);
  toolMessage = { role: 'assistant', content: content, reasoning_content: reasoning, tool_calls: calls };
});

test('tool result round trip', async () => {
  const messages = [...question, toolMessage,
    { role: 'tool', tool_call_id: toolMessage.tool_calls[0].id, content: 'sunny, 24 C' }];
  const r = await client.chat.completions.create({ model: 'k3', messages, tools });
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.choices[0].message.content, 'It is sunny in Paris.');
});

test('errors arrive as OpenAI errors', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'k3', messages: 'not a list' }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.error?.param === 'messages');
  const noKey = new OpenAI({ baseURL: process.env.K3_BASE_URL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(noKey.chat.completions.create({ model: 'k3', messages: question }),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
});
