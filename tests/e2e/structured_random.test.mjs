// tests/e2e/structured_random.test.mjs: constrained decoding on RANDOM weights. run.sh
// starts `k3 serve` on the golden small model (random weights, byte-level vocabulary); every
// schema of tests/data/grammar/schemas.json is asked for with response_format json_schema
// (strict) at temperature 1 under several seeds, and every answer must parse and validate
// under ajv (an independent JSON-schema validator, draft 2020-12, with formats). Without the
// grammar a random model's answer is noise, so only the constraint can make this pass.
// Needs K3_BASE_URL. K3_SEEDS (default 3) sets the seeds per schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const corpus = JSON.parse(readFileSync(new URL('../data/grammar/schemas.json', import.meta.url)));
const seeds = Number(process.env.K3_SEEDS ?? 3);
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);

async function chat(body) {
  const r = await fetch(`${process.env.K3_BASE_URL}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

test(`corpus has at least 30 schemas (${corpus.length})`, () => {
  assert.ok(corpus.length >= 30);
});

for (const { name, schema } of corpus) {
  test(`random weights obey ${name}`, async () => {
    const validate = ajv.compile(schema);
    for (let seed = 1; seed <= seeds; ++seed) {
      const { status, json } = await chat({
        messages: [{ role: 'user', content: `Give me ${name} as JSON.` }],
        response_format: { type: 'json_schema', json_schema: { name: 'answer', strict: true, schema } },
        temperature: 1, top_k: 0, top_p: 1, min_p: 0, seed, max_tokens: 3500,
        chat_template_kwargs: { thinking: false },
      });
      assert.equal(status, 200, JSON.stringify(json));
      const choice = json.choices[0];
      const content = choice.message.content;
      assert.equal(choice.finish_reason, 'stop', `seed ${seed}: ${JSON.stringify(content).slice(0, 300)}`);
      let value;
      assert.doesNotThrow(() => { value = JSON.parse(content); }, `seed ${seed}: not JSON: ${content.slice(0, 300)}`);
      assert.ok(validate(value), `seed ${seed}: ${JSON.stringify(validate.errors)} for ${content.slice(0, 300)}`);
    }
  });
}

test('a strict tool on random weights gets schema-valid arguments (streaming)', async () => {
  const parameters = corpus.find((c) => c.schema.type === 'object' && c.schema.required?.length)?.schema;
  const validate = ajv.compile(parameters);
  const tools = [{ type: 'function', function: { name: 'record', strict: true, parameters } }];
  for (let seed = 1; seed <= seeds; ++seed) {
    const { status, json } = await chat({
      messages: [{ role: 'user', content: 'Record it.' }], tools, tool_choice: 'required',
      temperature: 1, top_k: 0, top_p: 1, min_p: 0, seed, max_tokens: 3500, chat_template_kwargs: { thinking: false },
    });
    assert.equal(status, 200, JSON.stringify(json));
    const choice = json.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
    for (const call of choice.message.tool_calls) {
      assert.equal(call.function.name, 'record');
      const args = JSON.parse(call.function.arguments);
      assert.ok(validate(args), JSON.stringify(validate.errors) + ' ' + call.function.arguments);
    }
  }
});

test('schemas we cannot honour are refused with a 400 naming the keyword', async () => {
  const { status, json } = await chat({
    messages: [{ role: 'user', content: 'x' }],
    response_format: { type: 'json_schema', json_schema: { name: 'x', strict: true,
      schema: { type: 'object', properties: { a: { type: 'array', uniqueItems: true } } } } },
  });
  assert.equal(status, 400);
  assert.match(json.error.message, /uniqueItems/);
  assert.equal(json.error.param, 'response_format.json_schema.schema');
});
