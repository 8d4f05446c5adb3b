// Structured output within the token limit, through the official SDK: a json_schema or
// json_object answer, or a forced tool call (whose arguments are the document), comes out
// complete and valid, ended by its own stop token within max_output_tokens /
// max_completion_tokens, for every budget from the shortest complete output up; a smaller
// budget is a 400 naming that minimum. The model's weights are random: left alone it wanders
// (reasoning, free strings, long numbers) and runs into any limit, so here the budget is what
// ends the output, and every one is parsed and validated by ajv against its schema.
//
// Budgets, temperatures and seeds follow from one base, random per run and printed:
// GPTOSS_BUDGET_BASE=N repeats a run's requests. GPTOSS_BUDGET_SEEDS=N requests per case
// (default 1: the budget of exactly the minimum, as the SDK suite runs it on both stores);
// scripts/test-server.sh runs 20 per case against a model of its own (see there).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ajv, OpenAI } from '../deps.mjs';
import { client, MODEL } from './common.mjs';

const ajv = new Ajv({ strict: false });
const BASE = process.env.GPTOSS_BUDGET_BASE ? Number(process.env.GPTOSS_BUDGET_BASE) : Math.floor(Math.random() * 1e9);
const SEEDS = Number(process.env.GPTOSS_BUDGET_SEEDS ?? 1);
const CONCURRENCY = 16;  // the server's --max-running: one batch
console.log(`budget.test.mjs: GPTOSS_BUDGET_BASE=${BASE} GPTOSS_BUDGET_SEEDS=${SEEDS} repeats these requests`);

// Nested objects, an array of objects, enums, free strings and numbers. Few required keys, and
// short ones, keep the shortest complete output small (budgets up to 4x it stay cheap); the
// optional ones are the model's to write or not.
const SCHEMA = {
  type: 'object',
  properties: {
    n: { type: 'string' },
    s: { type: 'number' },
    k: { type: 'string', enum: ['red', 'green', 'blue'] },
    t: { type: 'array', items: { type: 'integer', minimum: -5, maximum: 99 } },
    o: {
      type: 'object',
      properties: {
        l: {
          type: 'array',
          items: { type: 'object', properties: { x: { type: 'number' }, e: { enum: ['on', 'off', null] }, y: { type: 'string' } }, required: ['x', 'e'], additionalProperties: false },
        },
        m: { type: 'string' },
      },
      required: ['l'],
      additionalProperties: false,
    },
  },
  required: ['n', 'o'],
  additionalProperties: false,
};
const OBJECT = { type: 'object' };  // json_object: any object
const FIND = {
  type: 'function',
  name: 'find',
  description: 'Looks something up.',
  parameters: {
    type: 'object',
    properties: {
      q: { type: 'string' },
      lim: { type: 'integer', minimum: 1 },
      mode: { type: 'string', enum: ['fast', 'deep'] },
      f: { type: 'object', properties: { z: { type: 'array', items: { type: 'string' } }, w: { type: 'number' } }, required: ['z'], additionalProperties: false },
    },
    required: ['q', 'mode'],
    additionalProperties: false,
  },
};
const NOTE = {
  type: 'function',
  name: 'note',
  description: 'Writes a note.',
  parameters: { type: 'object', properties: { text: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } }, required: ['text'], additionalProperties: false },
};
const TOOLS = [FIND, NOTE];
const chatTool = (t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } });

// Each case: what the request adds (per API), what must come out.
const CASES = {
  json_schema: {
    responses: { text: { format: { type: 'json_schema', name: 'doc', schema: SCHEMA, strict: true } } },
    chat: { response_format: { type: 'json_schema', json_schema: { name: 'doc', schema: SCHEMA, strict: true } } },
    schema: SCHEMA,
  },
  json_object: {
    responses: { text: { format: { type: 'json_object' } } },
    chat: { response_format: { type: 'json_object' } },
    schema: OBJECT,
  },
  tool_required: {
    responses: { tools: TOOLS, tool_choice: 'required' },
    chat: { tools: TOOLS.map(chatTool), tool_choice: 'required' },
    tools: TOOLS,
  },
  tool_named: {
    responses: { tools: TOOLS, tool_choice: { type: 'function', name: 'find' } },
    chat: { tools: TOOLS.map(chatTool), tool_choice: { type: 'function', function: { name: 'find' } } },
    tools: [FIND],
  },
};
const INPUT = 'Fill it in.';

// A small deterministic generator (mulberry32): budgets and temperatures follow from the base.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function runPool(tasks) {
  const results = [];
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return results;
}

// The shortest complete output, as the 400 for a 1-token budget states it.
async function minimum(caseName, api) {
  const c = CASES[caseName];
  const create = api === 'responses'
    ? () => client.responses.create({ model: MODEL, input: INPUT, ...c.responses, max_output_tokens: 1 })
    : () => client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: INPUT }], ...c.chat, max_completion_tokens: 1 });
  const param = api === 'responses' ? 'max_output_tokens' : 'max_completion_tokens';
  let min = 0;
  await assert.rejects(create, (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError, `${caseName}/${api}: ${e}`);
    assert.equal(e.param, param);
    assert.equal(e.code, 'integer_below_min_value');
    const m = e.message.match(/Expected a value >= (\d+), but got 1 instead/);
    assert.ok(m, e.message);
    min = Number(m[1]);
    assert.ok(e.message.includes(`takes ${min} tokens`), e.message);
    return true;
  });
  assert.ok(min > 1, `${caseName}/${api}: minimum ${min}`);
  return min;
}

// The document(s) of an output, validated; returns a description for failure messages.
function checkDocuments(c, text, calls, what) {
  if (c.tools) {
    assert.ok(calls.length >= 1, `${what}: no call (text ${JSON.stringify(text)})`);
    for (const call of calls) {
      const tool = c.tools.find((t) => t.name === call.name);
      assert.ok(tool, `${what}: called ${call.name}`);
      let args;
      assert.doesNotThrow(() => { args = JSON.parse(call.arguments); }, `${what}: arguments ${JSON.stringify(call.arguments)}`);
      assert.ok(ajv.validate(tool.parameters, args), `${what}: ${call.arguments}: ${ajv.errorsText()}`);
    }
    return;
  }
  let doc;
  assert.doesNotThrow(() => { doc = JSON.parse(text); }, `${what}: answer ${JSON.stringify(text)}`);
  assert.ok(doc !== null && typeof doc === 'object' && !Array.isArray(doc), `${what}: not an object: ${text}`);
  assert.ok(ajv.validate(c.schema, doc), `${what}: ${text}: ${ajv.errorsText()}`);
}

function checkResponse(c, r, budget, what) {
  assert.equal(r.status, 'completed', `${what}: ${JSON.stringify(r.incomplete_details)} ${JSON.stringify(r.output)}`);
  assert.equal(typeof r.closed_by_budget, 'boolean', what);
  assert.ok(r.usage.output_tokens <= budget, `${what}: ${r.usage.output_tokens} output tokens`);
  for (const item of r.output) assert.equal(item.status, 'completed', `${what}: ${JSON.stringify(item)}`);
  const answers = r.output.filter((i) => i.type === 'message' && i.phase !== 'commentary');
  const calls = r.output.filter((i) => i.type === 'function_call');
  if (c.tools) assert.equal(answers.length, 0, `${what}: an answer where a call is forced`);
  else assert.equal(answers.length, 1, `${what}: ${JSON.stringify(r.output)}`);
  checkDocuments(c, answers[0]?.content[0].text, calls, what);
}

async function responsesPlain(c, request, budget, what) {
  const r = await client.responses.create(request);
  checkResponse(c, r, budget, what);
  const stored = await client.responses.retrieve(r.id);
  assert.equal(stored.status, 'completed', what);
  assert.equal(stored.closed_by_budget, r.closed_by_budget, `${what}: stored`);
  return r.closed_by_budget;
}

async function responsesStream(c, request, budget, what) {
  const stream = await client.responses.create({ ...request, stream: true });
  const terminal = [];
  for await (const event of stream)
    if (['response.completed', 'response.incomplete', 'response.failed'].includes(event.type)) terminal.push(event);
  assert.equal(terminal.length, 1, what);
  assert.equal(terminal[0].type, 'response.completed', `${what}: ${JSON.stringify(terminal[0].response?.incomplete_details)}`);
  checkResponse(c, terminal[0].response, budget, what);
  const stored = await client.responses.retrieve(terminal[0].response.id);
  assert.equal(stored.closed_by_budget, terminal[0].response.closed_by_budget, `${what}: stored`);
  return terminal[0].response.closed_by_budget;
}

function checkChoice(c, choice, usage, budget, what) {
  const forced = Boolean(c.tools);
  assert.equal(choice.finish_reason, forced ? 'tool_calls' : 'stop', what);
  assert.equal(typeof choice.closed_by_budget, 'boolean', what);
  assert.ok(usage.completion_tokens <= budget, `${what}: ${usage.completion_tokens} completion tokens`);
  // With tools, content may hold commentary preambles; without, only the answer.
  const calls = (choice.message.tool_calls ?? []).map((t) => t.function);
  checkDocuments(c, choice.message.content, calls, what);
  return choice.closed_by_budget;
}

async function chatPlain(c, request, budget, what) {
  const r = await client.chat.completions.create(request);
  return checkChoice(c, r.choices[0], r.usage, budget, what);
}

async function chatStream(c, request, budget, what) {
  const stream = await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
  let content = '';
  const calls = [];
  let last = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    content += choice.delta?.content ?? '';
    for (const t of choice.delta?.tool_calls ?? []) {
      calls[t.index] ??= { name: '', arguments: '' };
      calls[t.index].name += t.function?.name ?? '';
      calls[t.index].arguments += t.function?.arguments ?? '';
    }
    if (choice.finish_reason) last = choice;
  }
  assert.ok(last && usage, `${what}: no finish chunk or usage`);
  const message = { content: content || null, tool_calls: calls.length ? calls.map((f) => ({ function: f })) : undefined };
  return checkChoice(c, { ...last, message }, usage, budget, what);
}

const APIS = { responses: responsesPlain, 'responses-stream': responsesStream, chat: chatPlain, 'chat-stream': chatStream };

test('structured output ends complete and valid within every budget from its minimum to 4x', async () => {
  const minimums = {};
  for (const caseName of Object.keys(CASES))
    for (const family of ['responses', 'chat']) minimums[`${caseName}/${family}`] = await minimum(caseName, family);
  console.log(`budget.test.mjs: shortest complete outputs ${JSON.stringify(minimums)}`);

  const tasks = [];
  const closed = {};
  let caseIndex = 0;
  for (const [caseName, c] of Object.entries(CASES))
    for (const [api, run] of Object.entries(APIS)) {
      const family = api.startsWith('chat') ? 'chat' : 'responses';
      const min = minimums[`${caseName}/${family}`];
      const random = rng(BASE + 7919 * ++caseIndex);
      for (let i = 0; i < SEEDS; ++i) {
        const seed = BASE + i;
        // The edges first (exactly the minimum, 4x), then anywhere between.
        const budget = i === 0 ? min : i === 1 ? 4 * min : min + Math.floor(random() * (3 * min + 1));
        const temperature = Math.round((0.7 + 0.8 * random()) * 100) / 100;
        const reasoning = i % 2 === 1 ? { max_reasoning_tokens: 16 } : {};
        const request = family === 'responses'
          ? { model: MODEL, input: INPUT, ...c.responses, max_output_tokens: budget, temperature, seed, ...reasoning }
          : { model: MODEL, messages: [{ role: 'user', content: INPUT }], ...c.chat, max_completion_tokens: budget, temperature, seed, ...reasoning };
        const what = `${caseName} ${api} seed ${seed} budget ${budget} (min ${min}) temperature ${temperature}` +
          `${reasoning.max_reasoning_tokens ? ' max_reasoning_tokens 16' : ''} [GPTOSS_BUDGET_BASE=${BASE}]`;
        tasks.push(async () => {
          const wasClosed = await run(c, request, budget, what);
          const key = `${caseName} ${api}`;
          closed[key] ??= { closed: 0, of: 0 };
          closed[key].of += 1;
          if (wasClosed) closed[key].closed += 1;
          if (i === 0) assert.equal(wasClosed, true, `${what}: a budget of exactly the minimum leaves no choice`);
        });
      }
    }
  await runPool(tasks);
  console.log(`budget.test.mjs: closed by the budget, per case: ${JSON.stringify(closed)}`);
});

test('a budget below the minimum is a 400 naming it (max_tokens too); free text is not held to one', async () => {
  const min = await minimum('json_schema', 'responses');
  await assert.rejects(
    client.responses.create({ model: MODEL, input: INPUT, ...CASES.json_schema.responses, max_output_tokens: min - 1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'max_output_tokens' && e.message.includes(`>= ${min},`));
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: INPUT }], ...CASES.tool_named.chat, max_tokens: 2 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'max_tokens' && e.code === 'integer_below_min_value');
  // A free-text answer keeps the API's behaviour: any limit, cut short it is `incomplete`.
  const text = await client.responses.create({ model: MODEL, input: INPUT, max_output_tokens: 1, seed: 1 });
  assert.equal(text.status, 'incomplete');
  assert.equal(text.closed_by_budget, false);
});

test('without a limit the context left is the budget: too little is a 400, just enough completes', async () => {
  const { data } = await client.models.list();
  const context = data[0].context_length;
  const c = CASES.json_object;
  const min = await minimum('json_object', 'responses');
  // " x" is one token: the prompt grows by one per word.
  const request = (words) => ({ model: MODEL, input: 'x' + ' x'.repeat(words), ...c.responses, seed: BASE });
  const probe = await client.responses.create({ ...request(0), max_output_tokens: min });
  checkResponse(c, probe, min, `probe [GPTOSS_BUDGET_BASE=${BASE}]`);
  const words = context - probe.usage.input_tokens - min;  // leaves exactly min tokens of room
  await assert.rejects(client.responses.create(request(words + 1)),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'input' && e.code === 'context_length_exceeded' &&
           e.message.includes(`takes ${min} tokens`));
  const r = await client.responses.create(request(words));
  assert.equal(r.usage.input_tokens, context - min);
  checkResponse(c, r, min, `context room ${min} [GPTOSS_BUDGET_BASE=${BASE}]`);
  assert.equal(r.closed_by_budget, true);
});
