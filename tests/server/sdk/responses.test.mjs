// /v1/responses through the official SDK: plain, streamed (every event checked), the
// responses.stream() helper against the plain result, stored responses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { client, MODEL, checkResponseStream, rawResponseEvents, stripIds } from './common.mjs';

const REQUEST = {
  model: MODEL,
  instructions: 'Answer briefly.',
  input: [{ role: 'user', content: 'What is the capital of France?' }],
  max_output_tokens: 24,
  reasoning: { effort: 'low' },
  seed: 42,
  metadata: { suite: 'sdk' },
};

test('responses.create returns a whole Response object', async () => {
  const r = await client.responses.create(REQUEST);
  assert.match(r.id, /^resp_/);
  assert.equal(r.object, 'response');
  assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
  if (r.status === 'incomplete') assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(r.model, MODEL);
  assert.equal(r.instructions, REQUEST.instructions);
  assert.equal(r.max_output_tokens, 24);
  assert.deepEqual(r.metadata, { suite: 'sdk' });
  assert.deepEqual(r.reasoning, { effort: 'low', summary: null });
  assert.equal(r.store, true);
  assert.ok(r.output.length >= 1);
  for (const item of r.output) {
    assert.ok(['message', 'reasoning', 'function_call'].includes(item.type), item.type);
    if (item.type === 'message') {
      assert.match(item.id, /^msg_/);
      assert.equal(item.role, 'assistant');
      assert.equal(item.content[0].type, 'output_text');
      assert.deepEqual(item.content[0].annotations, []);
      assert.ok(!item.content[0].text.includes('<|'), 'no raw Harmony in the answer');
    }
    if (item.type === 'reasoning') {
      assert.match(item.id, /^rs_/);
      assert.equal(item.content[0].type, 'reasoning_text');
    }
  }
  const u = r.usage;
  assert.ok(u.input_tokens > 0 && u.output_tokens > 0 && u.output_tokens <= 24);
  assert.equal(u.total_tokens, u.input_tokens + u.output_tokens);
  assert.equal(typeof u.input_tokens_details.cached_tokens, 'number');
  assert.equal(typeof u.output_tokens_details.reasoning_tokens, 'number');
});

test('a streamed response is well-formed event by event and ends with the whole Response', async () => {
  const events = await rawResponseEvents(REQUEST);
  const final = checkResponseStream(events);
  assert.ok(['completed', 'incomplete'].includes(final.status));
  assert.ok(final.usage.output_tokens > 0);
});

test('responses.stream() rebuilds the same response as the plain call (same seed)', async () => {
  const plain = await client.responses.create(REQUEST);
  const stream = client.responses.stream(REQUEST);
  const seen = [];
  for await (const event of stream) seen.push(event.type);
  const streamed = await stream.finalResponse();
  assert.deepEqual(stripIds(streamed), stripIds({ ...plain, usage: { ...plain.usage, input_tokens_details: streamed.usage.input_tokens_details } }));
  assert.equal(streamed.output_text, plain.output_text);
  assert.ok(seen.includes('response.completed') || seen.includes('response.incomplete'));
});

test('logprobs come with output_text when asked', async () => {
  const r = await client.responses.create({ ...REQUEST, top_logprobs: 2, include: ['message.output_text.logprobs'] });
  const message = r.output.find((i) => i.type === 'message');
  assert.ok(message, 'a message item');
  const lps = message.content[0].logprobs;
  assert.ok(Array.isArray(lps) && lps.length > 0, 'logprobs present');
  for (const lp of lps) {
    assert.equal(typeof lp.token, 'string');
    assert.ok(lp.logprob <= 0);
    assert.ok(Array.isArray(lp.bytes));
    assert.equal(lp.top_logprobs.length, 2);
  }
});

test('a stored response can be retrieved, its input listed, and deleted', async () => {
  const r = await client.responses.create({ ...REQUEST, max_output_tokens: 8 });
  const got = await client.responses.retrieve(r.id);
  assert.deepEqual(got, r);
  const items = await client.responses.inputItems.list(r.id, { order: 'asc' });
  assert.equal(items.data.length, 1);
  assert.equal(items.data[0].type, 'message');
  assert.equal(items.data[0].role, 'user');
  assert.match(items.data[0].id, /^msg_/);
  const deleted = await client.responses.delete(r.id);
  assert.deepEqual(deleted, { id: r.id, object: 'response.deleted', deleted: true });
  await assert.rejects(client.responses.retrieve(r.id), (e) => e.status === 404);
});

test('store: false is not retrievable', async () => {
  const r = await client.responses.create({ ...REQUEST, max_output_tokens: 4, store: false });
  assert.equal(r.store, false);
  await assert.rejects(client.responses.retrieve(r.id), (e) => e.status === 404);
});

test('previous_response_id continues the conversation with its items', async () => {
  const first = await client.responses.create({ ...REQUEST, max_output_tokens: 8 });
  const second = await client.responses.create({
    model: MODEL, previous_response_id: first.id, input: 'And of Italy?', max_output_tokens: 8, seed: 1,
  });
  assert.equal(second.previous_response_id, first.id);
  assert.ok(second.usage.input_tokens > first.usage.input_tokens);
  const items = await client.responses.inputItems.list(second.id, { order: 'asc', limit: 100 });
  // The first turn's input, its output, then the new message.
  assert.equal(items.data.length, 1 + first.output.length + 1);
  assert.deepEqual(items.data.slice(1, 1 + first.output.length).map((i) => i.id), first.output.map((i) => i.id));
  assert.equal(items.data.at(-1).content[0].text, 'And of Italy?');
  const desc = await client.responses.inputItems.list(second.id, { limit: 1 });
  assert.equal(desc.data[0].id, items.data.at(-1).id, 'newest first by default');
  assert.equal(desc.has_more, true);
});

test('tools the model is not offered are skipped, not refused', async () => {
  const r = await client.responses.create({
    ...REQUEST, max_output_tokens: 4, tools: [{ type: 'web_search' }, { type: 'local_shell' }, WEATHER],
  });
  assert.ok(['completed', 'incomplete'].includes(r.status));
  assert.equal(r.tools.length, 3);
});

const WEATHER = { type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} } };
