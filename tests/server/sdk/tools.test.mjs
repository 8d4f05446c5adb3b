// What constrained decoding guarantees, seen through the SDK: a forced tool call names an
// allowed tool with arguments valid under its schema (validated by ajv, not by the server),
// json_schema output validates, Harmony never leaks into content. The tiny model's weights are
// random, so every output here is the constraint's doing. Schemas are bounded (enums, ranges)
// and reasoning capped, so outputs end well within the token limit.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ajv } from '../deps.mjs';
import { client, MODEL, checkResponseStream, rawResponseEvents } from './common.mjs';

const ajv = new Ajv({ strict: false });
const WEATHER = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather in a city.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string', enum: ['Paris', 'Rome', 'Oslo'] }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city', 'unit'],
    additionalProperties: false,
  },
};
const TIME = {
  type: 'function',
  name: 'get_time',
  description: 'Local time.',
  parameters: { type: 'object', properties: { utc_offset: { type: 'integer', minimum: -12, maximum: 14 } }, required: ['utc_offset'], additionalProperties: false },
};
const BASE = { model: MODEL, max_output_tokens: 200, max_reasoning_tokens: 8 };
const SCHEMA = {
  type: 'object',
  properties: {
    answer: { type: 'string', enum: ['yes', 'no', 'maybe'] },
    confidence: { type: 'integer', minimum: 0, maximum: 100 },
    tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] }, minItems: 1, maxItems: 3 },
    nested: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false },
  },
  required: ['answer', 'confidence', 'tags', 'nested'],
  additionalProperties: false,
};

function noHarmony(text) {
  assert.ok(!/<\|[a-z_]+\|>/.test(text ?? ''), `raw Harmony in ${JSON.stringify(text)}`);
}

function validCall(call, tools) {
  const tool = tools.find((t) => t.name === call.name);
  assert.ok(tool, `called ${call.name}, not one of ${tools.map((t) => t.name)}`);
  const args = JSON.parse(call.arguments);
  assert.ok(ajv.validate(tool.parameters, args), `${call.arguments}: ${ajv.errorsText()}`);
  return args;
}

for (const seed of [1, 2, 3]) {
  test(`tool_choice required forces a valid call, and its output continues the conversation (seed ${seed})`, async () => {
    const r = await client.responses.create({ ...BASE, seed, input: 'Weather in Paris?', tools: [WEATHER, TIME], tool_choice: 'required' });
    assert.equal(r.status, 'completed', JSON.stringify(r.output));
    const calls = r.output.filter((i) => i.type === 'function_call');
    assert.equal(calls.length, 1);
    assert.ok(!r.output.some((i) => i.type === 'message'), 'no answer when a call is required');
    validCall(calls[0], [WEATHER, TIME]);
    assert.match(calls[0].call_id, /^call_/);

    const next = await client.responses.create({
      ...BASE, seed, previous_response_id: r.id, tools: [WEATHER, TIME],
      input: [{ type: 'function_call_output', call_id: calls[0].call_id, output: '{"temperature": 21}' }],
    });
    assert.ok(['completed', 'incomplete'].includes(next.status));
    const items = await client.responses.inputItems.list(next.id, { order: 'asc', limit: 100 });
    const types = items.data.map((i) => i.type);
    assert.ok(types.includes('function_call') && types.at(-1) === 'function_call_output', types.join());
    assert.equal(items.data.find((i) => i.type === 'function_call').call_id, calls[0].call_id);
    for (const item of next.output) if (item.type === 'message') noHarmony(item.content[0].text);
  });
}

test('a named tool_choice calls that tool; none calls nothing', async () => {
  const named = await client.responses.create({ ...BASE, seed: 4, input: 'Time?', tools: [WEATHER, TIME], tool_choice: { type: 'function', name: 'get_time' } });
  const calls = named.output.filter((i) => i.type === 'function_call');
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, 'get_time');
  const args = validCall(calls[0], [TIME]);
  assert.ok(Number.isInteger(args.utc_offset));

  const none = await client.responses.create({ ...BASE, seed: 4, input: 'Time?', tools: [WEATHER, TIME], tool_choice: 'none', max_output_tokens: 40 });
  assert.ok(!none.output.some((i) => i.type === 'function_call'));
});

test('a streamed forced call: arguments in pieces, the SDK helper agrees with the events', async () => {
  const request = { ...BASE, seed: 5, input: 'Weather?', tools: [WEATHER], tool_choice: 'required' };
  const events = await rawResponseEvents(request);
  const final = checkResponseStream(events);
  const call = final.output.find((i) => i.type === 'function_call');
  validCall(call, [WEATHER]);
  assert.ok(events.some((e) => e.type === 'response.function_call_arguments.delta'));

  const stream = client.responses.stream(request);
  const helper = await stream.finalResponse();
  assert.equal(helper.output.find((i) => i.type === 'function_call').arguments, call.arguments);
});

for (const seed of [11, 12, 13]) {
  test(`text.format json_schema output validates (seed ${seed})`, async () => {
    const r = await client.responses.create({
      ...BASE, seed, input: 'Answer in JSON.',
      text: { format: { type: 'json_schema', name: 'verdict', schema: SCHEMA, strict: true } },
    });
    assert.equal(r.status, 'completed');
    assert.ok(ajv.validate(SCHEMA, JSON.parse(r.output_text)), `${r.output_text}: ${ajv.errorsText()}`);
  });
}

test('json_object output is a JSON object', async () => {
  const r = await client.responses.create({ ...BASE, seed: 21, input: 'JSON please.', max_output_tokens: 400, text: { format: { type: 'json_object' } } });
  // Free strings would run to the cap; the budget closes them within it (budget.test.mjs).
  assert.equal(r.status, 'completed');
  assert.equal(typeof JSON.parse(r.output_text), 'object');
  noHarmony(r.output_text);
});

test('the reasoning budget closes analysis and opens the answer', async () => {
  const r = await client.responses.create({ ...BASE, seed: 31, input: 'Think, then answer.', max_reasoning_tokens: 4, max_output_tokens: 60 });
  assert.ok(r.usage.output_tokens_details.reasoning_tokens <= 4 + 8, `${r.usage.output_tokens_details.reasoning_tokens} reasoning tokens`);
  assert.ok(r.output.some((i) => i.type === 'message'), 'an answer after the budget');
});

test('chat: tools with tool_choice required, plain and streamed', async () => {
  const request = {
    model: MODEL, seed: 6, max_tokens: 200, max_reasoning_tokens: 8,
    messages: [{ role: 'user', content: 'Weather in Rome?' }],
    tools: [{ type: 'function', function: { name: WEATHER.name, description: WEATHER.description, parameters: WEATHER.parameters } }],
    tool_choice: 'required',
  };
  const plain = await client.chat.completions.create(request);
  const choice = plain.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls.length, 1);
  validCall({ name: choice.message.tool_calls[0].function.name, arguments: choice.message.tool_calls[0].function.arguments }, [WEATHER]);
  noHarmony(choice.message.content);

  const stream = client.chat.completions.stream(request);
  let pieces = 0;
  for await (const chunk of stream) if (chunk.choices[0]?.delta?.tool_calls?.[0]?.function?.arguments) ++pieces;
  const final = await stream.finalChatCompletion();
  assert.ok(pieces >= 1);
  assert.deepEqual(final.choices[0].message.tool_calls.map((t) => t.function), choice.message.tool_calls.map((t) => t.function));
  assert.equal(final.choices[0].finish_reason, 'tool_calls');

  // The tool's answer goes back as a tool message.
  const answer = await client.chat.completions.create({
    ...request, tool_choice: 'auto', max_tokens: 40,
    messages: [...request.messages, choice.message, { role: 'tool', tool_call_id: choice.message.tool_calls[0].id, content: '{"temperature": 19}' }],
  });
  assert.ok(answer.choices[0].finish_reason);
});

test('chat: response_format json_schema validates', async () => {
  const c = await client.chat.completions.create({
    model: MODEL, seed: 8, max_tokens: 200, max_reasoning_tokens: 8,
    messages: [{ role: 'user', content: 'JSON.' }],
    response_format: { type: 'json_schema', json_schema: { name: 'verdict', schema: SCHEMA, strict: true } },
  });
  assert.equal(c.choices[0].finish_reason, 'stop');
  assert.ok(ajv.validate(SCHEMA, JSON.parse(c.choices[0].message.content)), ajv.errorsText());
});

test('parallel_tool_calls: false allows one call per turn (Responses and Chat)', async () => {
  const FLAG = { type: 'function', name: 'flag', parameters: { type: 'object', properties: { b: { type: 'boolean' } }, required: ['b'], additionalProperties: false } };
  const FLAG2 = { type: 'function', name: 'flag2', parameters: { type: 'object', properties: { k: { type: 'integer', enum: [1, 2] } }, required: ['k'], additionalProperties: false } };
  const calls = async (choice, seed, parallel) => {
    const r = await client.responses.create({
      model: MODEL, input: 'go', tools: [FLAG, FLAG2], tool_choice: choice, parallel_tool_calls: parallel,
      // A forced call is completed within the limit: a second call needs room for a whole one.
      max_output_tokens: parallel ? 100 : 48, max_reasoning_tokens: 4, seed,
    });
    assert.equal(r.parallel_tool_calls, parallel);
    return r.output.filter((i) => i.type === 'function_call');
  };
  let most = 0;
  for (const choice of ['required', { type: 'function', name: 'flag2' }]) {
    for (const seed of [1, 2, 3, 4, 5]) {
      const one = await calls(choice, seed, false);
      assert.equal(one.length, 1, `${JSON.stringify(choice)} seed ${seed}: ${one.map((c) => c.name)}`);
      validCall(one[0], [FLAG, FLAG2]);
      most = Math.max(most, (await calls(choice, seed, true)).length);
    }
  }
  assert.ok(most > 1, 'with parallel calls allowed, some of these seeds make several (the check above can fail)');
  const chatTools = [FLAG, FLAG2].map((t) => ({ type: 'function', function: { name: t.name, parameters: t.parameters } }));
  for (const seed of [1, 2, 3]) {
    const c = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'go' }], tools: chatTools, parallel_tool_calls: false,
      tool_choice: { type: 'function', function: { name: 'flag2' } }, max_tokens: 48, max_reasoning_tokens: 4, seed,
    });
    assert.equal(c.choices[0].message.tool_calls?.length, 1, `chat seed ${seed}`);
  }
});
