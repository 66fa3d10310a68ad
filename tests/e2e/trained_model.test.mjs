// tests/e2e/trained_model.test.mjs: the official `openai` client against `k3 serve` running the
// embedded trained model (models/k3-tiny), greedy decoding. Unlike openai_client.test.mjs the
// answers are the model's own: the checks are what a client relies on (the think channel comes
// back as reasoning_content, the answer as content, a tool call as tool_calls with JSON
// arguments that fit the declared schema, no chat markers leak). k3-tiny's facts are often
// wrong (models/k3-tiny/README.md), so no answer's truth is asserted. Needs K3_BASE_URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: process.env.K3_BASE_URL, apiKey: 'unused', maxRetries: 0 });
const markers = /<\|(open|close|sep|end_of_msg)\|>|\[EOS\]|\[EOT\]/;

test('a reasoned answer: reasoning_content and content, nothing leaked', async () => {
  const r = await client.chat.completions.create({
    model: 'k3-tiny', temperature: 0, max_tokens: 200,
    messages: [{ role: 'user', content: 'What is the capital of France?' }],
  });
  const m = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.ok(m.reasoning_content && m.reasoning_content.length > 0, 'no reasoning_content');
  assert.ok(m.content && m.content.length > 0, 'no content');
  assert.doesNotMatch(m.content, markers);
  assert.doesNotMatch(m.reasoning_content, markers);
});

test('a streamed answer: the think channel arrives as reasoning_content deltas', async () => {
  const stream = await client.chat.completions.create({
    model: 'k3-tiny', temperature: 0, max_tokens: 300, stream: true,
    messages: [{ role: 'user', content: 'Give me the opposite of the word \'asleep\'.' }],
  });
  let reasoning = '', content = '', finish = null;
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta ?? {};
    reasoning += d.reasoning_content ?? '';
    content += d.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(finish, 'stop');
  assert.ok(reasoning.length > 0);
  assert.ok(content.length > 0);
  assert.doesNotMatch(content + reasoning, markers);
});

// The tool as k3-tiny saw it in training (train/data_tools.py). get_time is the tool the
// shipped model calls most reliably (bench/spot_checks.sh has the rates over all seven tools);
// the check is the path from the model's own frames to tool_calls, not the argument's truth.
const clock = [{
  type: 'function',
  function: {
    name: 'get_time', description: 'Get the current local date and time in a time zone.',
    parameters: {
      type: 'object',
      properties: {
        timezone: { type: 'string', description: 'IANA time zone name, for example "Europe/Paris"' },
      },
      required: ['timezone'],
    },
  },
}];

test('a tool call produced by the model, parsed into tool_calls with schema-valid arguments', async () => {
  const r = await client.chat.completions.create({
    model: 'k3-tiny', temperature: 0, max_tokens: 300, tools: clock,
    messages: [{ role: 'user', content: 'What time is it in Cairo?' }],
  });
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.tool_calls.length, 1);
  const call = c.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_time');
  const args = JSON.parse(call.function.arguments);
  assert.deepEqual(Object.keys(args), ['timezone']);
  assert.equal(typeof args.timezone, 'string');
  assert.ok(args.timezone.length > 0);
  assert.ok(c.message.reasoning_content.length > 0);
  assert.doesNotMatch(c.message.reasoning_content + (c.message.content ?? ''), markers);
});
