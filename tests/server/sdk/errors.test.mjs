// Bad requests get OpenAI-shaped errors with the right status, which the SDK turns into the
// right APIError subclass; the server keeps serving.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OpenAI } from '../deps.mjs';
import { authHeaders, BASE_URL, client, MODEL } from './common.mjs';

async function post(path, body, contentType = 'application/json') {
  const res = await fetch(`${BASE_URL}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': contentType, ...authHeaders() },
    body,
  });
  return { status: res.status, body: await res.json() };
}

function errorShape(body) {
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  assert.equal(typeof body.error.type, 'string');
  assert.ok('param' in body.error && 'code' in body.error);
}

test('malformed JSON is a 400 naming the problem', async () => {
  for (const path of ['/v1/responses', '/v1/chat/completions', '/v1/completions']) {
    const r = await post(path, '{"model": "x", "input": ');
    assert.equal(r.status, 400, path);
    errorShape(r.body);
    assert.equal(r.body.error.code, 'invalid_json');
    const arr = await post(path, '[1, 2]');
    assert.equal(arr.status, 400);
  }
});

test('wrong types and out-of-range values are BadRequestError naming the parameter', async () => {
  const cases = [
    [{ model: MODEL, input: 'hi', temperature: 'hot' }, 'temperature'],
    [{ model: MODEL, input: 'hi', temperature: 9 }, 'temperature'],
    [{ model: MODEL, input: 'hi', max_output_tokens: -1 }, 'max_output_tokens'],
    [{ model: MODEL, input: [{ role: 'user', content: 42 }] }, 'input[0].content'],
    [{ model: MODEL, input: [{ role: 'wizard', content: 'x' }] }, 'input[0].role'],
    [{ model: MODEL, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }, 'input[0].content[0].type'],
    [{ model: MODEL, input: 'hi', reasoning: { effort: 'extreme' } }, 'reasoning.effort'],
    [{ model: MODEL, input: 'hi', tool_choice: { type: 'function', name: 'nope' } }, 'tool_choice'],
    [{ model: MODEL }, 'input'],
  ];
  for (const [body, param] of cases) {
    await assert.rejects(client.responses.create(body), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `${param}: ${e}`);
      assert.equal(e.param, param);
      return true;
    });
  }
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], n: 0 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'n',
  );
});

test('more generations than the queue holds is a BadRequestError, not a retryable 429', async () => {
  // 65 prompts x n = 1 against --max-queue 64 (the default): it could never be admitted.
  await assert.rejects(
    client.completions.create({ model: MODEL, prompt: Array.from({ length: 65 }, (_, i) => `p${i}`), max_tokens: 1 }),
    (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.param, 'n');
      return true;
    },
  );
});

test('an unknown model is a NotFoundError', async () => {
  await assert.rejects(client.responses.create({ model: 'gpt-5', input: 'hi' }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
  await assert.rejects(client.chat.completions.create({ model: 'gpt-5', messages: [{ role: 'user', content: 'hi' }] }),
    (e) => e instanceof OpenAI.NotFoundError);
});

test('a prompt longer than the context is a BadRequestError (context_length_exceeded)', async () => {
  const long = 'word '.repeat(20000);
  await assert.rejects(client.responses.create({ model: MODEL, input: long }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
  await assert.rejects(client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: long }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
  await assert.rejects(client.completions.create({ model: MODEL, prompt: long }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
});

test('an invalid tool schema is a BadRequestError', async () => {
  const bad = [
    { type: 'function', name: 'bad name!', parameters: { type: 'object' } },
    { type: 'function', name: 'f', parameters: 'not a schema' },
    { type: 'function', name: 'f', parameters: { type: 'object', properties: [] } },
    { type: 'function', name: 'f', parameters: { type: 'object', required: 'x' } },
  ];
  for (const tool of bad)
    await assert.rejects(client.responses.create({ model: MODEL, input: 'hi', tools: [tool] }),
      (e) => e instanceof OpenAI.BadRequestError, JSON.stringify(tool));
  await assert.rejects(client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'hi' }],
    tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: 5 } } } }],
  }), (e) => e instanceof OpenAI.BadRequestError);
});

test('a function_call_output without its call, and an unknown previous response, are 400', async () => {
  await assert.rejects(client.responses.create({
    model: MODEL, input: [{ type: 'function_call_output', call_id: 'call_nope', output: '{}' }],
  }), (e) => e instanceof OpenAI.BadRequestError);
  await assert.rejects(client.responses.create({ model: MODEL, input: 'hi', previous_response_id: 'resp_nope' }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === 'previous_response_not_found');
});

test('unknown URLs are 404 in the same shape, and the server still serves', async () => {
  const res = await fetch(`${BASE_URL}/v1/nothing-here`, { headers: authHeaders() });
  assert.equal(res.status, 404);
  errorShape(await res.json());
  const ok = await client.responses.create({ model: MODEL, input: 'still there?', max_output_tokens: 2 });
  assert.ok(ok.id);
});

test('schemas the constraint compiler cannot enforce are 400s naming tools or the format', async () => {
  const tool = { type: 'function', name: 'f', parameters: { type: 'object', properties: { a: { type: 'string', pattern: '^x' } } } };
  await assert.rejects(client.responses.create({ model: MODEL, input: 'hi', tools: [tool] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'tools' && /pattern/.test(e.message));
  const format = { type: 'json_schema', name: 'o', schema: { type: 'object', properties: { a: { type: 'integer', minimum: 5, maximum: 1 } } } };
  await assert.rejects(client.responses.create({ model: MODEL, input: 'hi', text: { format } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'text.format');
  await assert.rejects(client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'hi' }],
    response_format: { type: 'json_schema', json_schema: { name: 'o', schema: { type: 'string', format: 'date', pattern: 'x' } } },
  }), (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format');
});
