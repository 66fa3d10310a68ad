// tests/e2e/structured_trained.test.mjs: the official openai client's structured outputs
// against `k3 serve` on the embedded trained model (run.sh): response_format json_schema and
// a strict tool, streaming and not. Every result is validated by ajv. Needs K3_BASE_URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const client = new OpenAI({ baseURL: process.env.K3_BASE_URL, apiKey: 'none', maxRetries: 0 });
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);

const weather = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 40 },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 1, maximum: 14 },
  },
  required: ['city', 'unit', 'days'],
  additionalProperties: false,
};
const validate = ajv.compile(weather);
const messages = [{ role: 'user', content: 'What is the weather in Paris for the next 3 days?' }];
const response_format = { type: 'json_schema', json_schema: { name: 'weather', strict: true, schema: weather } };
const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather forecast', strict: true, parameters: weather } }];

test('response_format json_schema, non-streaming', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({ model: 'k3', messages, response_format, seed, temperature: 1, max_tokens: 1500 });
    assert.equal(r.choices[0].finish_reason, 'stop');
    const v = JSON.parse(r.choices[0].message.content);
    assert.ok(validate(v), JSON.stringify(validate.errors) + r.choices[0].message.content);
  }
});

test('response_format json_schema, streaming', async () => {
  const stream = await client.chat.completions.create({ model: 'k3', messages, response_format, seed: 7, temperature: 1, max_tokens: 1500, stream: true });
  let content = '', finish = null;
  for await (const chunk of stream) {
    if (!chunk.choices.length) continue;
    content += chunk.choices[0].delta.content ?? '';
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  assert.equal(finish, 'stop');
  assert.ok(validate(JSON.parse(content)), JSON.stringify(validate.errors) + content);
});

test('a strict tool with tool_choice required, non-streaming', async () => {
  const r = await client.chat.completions.create({ model: 'k3', messages, tools, tool_choice: 'required', seed: 3, temperature: 1, max_tokens: 1500 });
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  const calls = r.choices[0].message.tool_calls;
  assert.ok(calls.length >= 1);
  for (const c of calls) {
    assert.equal(c.function.name, 'get_weather');
    assert.ok(validate(JSON.parse(c.function.arguments)), c.function.arguments);
  }
});

test('a strict tool named by tool_choice, streaming', async () => {
  const stream = await client.chat.completions.create({
    model: 'k3', messages, tools, tool_choice: { type: 'function', function: { name: 'get_weather' } },
    seed: 5, temperature: 1, max_tokens: 1500, stream: true,
  });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    if (!chunk.choices.length) continue;
    for (const tc of chunk.choices[0].delta.tool_calls ?? []) {
      if (!calls[tc.index]) calls[tc.index] = { name: tc.function.name, arguments: '' };
      calls[tc.index].arguments += tc.function.arguments ?? '';
    }
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  assert.equal(finish, 'tool_calls');
  assert.ok(calls.length >= 1);
  for (const c of calls) assert.ok(validate(JSON.parse(c.arguments)), c.arguments);
});

test('the SDK helper parse() with a zod-free JSON schema', async () => {
  // chat.completions.parse fills message.parsed from the JSON content.
  const r = await client.beta.chat.completions.parse({ model: 'k3', messages, response_format, seed: 11, temperature: 1, max_tokens: 1500 });
  assert.ok(validate(r.choices[0].message.parsed));
});
