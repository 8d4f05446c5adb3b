// /v1/chat/completions and /v1/completions through the official SDK.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { client, MODEL, WEATHER_TOOL } from './common.mjs';

const CHAT = {
  model: MODEL,
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Name a prime number.' },
  ],
  max_tokens: 24,
  reasoning_effort: 'low',
  seed: 7,
};

test('chat.completions.create returns a chat.completion', async () => {
  const c = await client.chat.completions.create(CHAT);
  assert.match(c.id, /^chatcmpl-/);
  assert.equal(c.object, 'chat.completion');
  assert.equal(c.model, MODEL);
  assert.equal(c.choices.length, 1);
  const choice = c.choices[0];
  assert.equal(choice.index, 0);
  assert.equal(choice.message.role, 'assistant');
  assert.ok(['stop', 'length', 'tool_calls'].includes(choice.finish_reason));
  for (const text of [choice.message.content, choice.message.reasoning_content])
    if (text) assert.ok(!text.includes('<|'), 'no raw Harmony');
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
  assert.ok(c.usage.completion_tokens <= 24);
});

test('chat.completions.stream() finalChatCompletion() equals the plain result (same seed)', async () => {
  const plain = await client.chat.completions.create(CHAT);
  const stream = client.chat.completions.stream({ ...CHAT, stream_options: { include_usage: true } });
  let reasoning = '';
  for await (const chunk of stream) reasoning += chunk.choices[0]?.delta?.reasoning_content ?? '';
  const final = await stream.finalChatCompletion();
  const message = (m) => ({ role: m.role, content: m.content ?? null, tool_calls: m.tool_calls ?? undefined, refusal: m.refusal ?? null });
  assert.deepEqual(message(final.choices[0].message), message(plain.choices[0].message));
  assert.equal(final.choices[0].finish_reason, plain.choices[0].finish_reason);
  // The SDK keeps only the last reasoning_content delta; the deltas together are the reasoning.
  assert.equal(reasoning, plain.choices[0].message.reasoning_content ?? '');
  assert.equal(final.usage.completion_tokens, plain.usage.completion_tokens);
  assert.equal(final.usage.prompt_tokens, plain.usage.prompt_tokens);
});

test('n choices, logprobs and top_logprobs', async () => {
  const c = await client.chat.completions.create({ ...CHAT, n: 2, logprobs: true, top_logprobs: 3 });
  assert.deepEqual(c.choices.map((x) => x.index), [0, 1]);
  for (const choice of c.choices) {
    assert.ok(choice.logprobs && Array.isArray(choice.logprobs.content));
    for (const lp of choice.logprobs.content) assert.equal(lp.top_logprobs.length, 3);
  }
});

test('a length limit inside a message header leaves no header text in content or logprobs', async () => {
  // Tiny budgets end most of these inside a header ('<|channel|>fin', ' to=functions.get_weather'):
  // the content is exactly the bytes of the tokens its logprobs list, and never header text.
  const text = (entries) => Buffer.from(entries.flatMap((e) => e.bytes)).toString('utf8');
  for (let seed = 1; seed <= 6; seed++) {
    for (const max_tokens of [1, 2, 3, 4, 6]) {
      const what = `seed ${seed}, max_tokens ${max_tokens}`;
      const c = await client.chat.completions.create({
        ...CHAT, tools: [{ type: 'function', function: { name: WEATHER_TOOL.name, parameters: WEATHER_TOOL.parameters } }],
        seed, max_tokens, logprobs: true,
      });
      const choice = c.choices[0];
      const content = choice.message.content ?? '';
      assert.equal(text(choice.logprobs?.content ?? []), content, what);
      assert.ok(!content.includes('to=') && !content.includes('<|'), `${what}: ${JSON.stringify(content)}`);
      const r = await client.responses.create({
        model: MODEL, input: 'Name a prime number.', tools: [WEATHER_TOOL],
        seed, max_output_tokens: max_tokens, include: ['message.output_text.logprobs'],
      });
      for (const item of r.output.filter((o) => o.type === 'message'))
        for (const part of item.content) {
          assert.equal(text(part.logprobs ?? []), part.text, `responses ${what}`);
          assert.ok(!part.text.includes('to=') && !part.text.includes('<|'), `responses ${what}: ${JSON.stringify(part.text)}`);
        }
    }
  }
});

test('stop strings end the answer and are never emitted', async () => {
  const c = await client.completions.create({ model: MODEL, prompt: 'a b c d e f g', max_tokens: 40, seed: 3 });
  const text = c.choices[0].text;
  const stop = text.trim().slice(0, 2);
  if (stop.length < 1) return;  // nothing generated to stop on
  const stopped = await client.completions.create({ model: MODEL, prompt: 'a b c d e f g', max_tokens: 40, seed: 3, stop: [stop] });
  assert.ok(!stopped.choices[0].text.includes(stop), `stop string ${JSON.stringify(stop)} emitted`);
  assert.equal(stopped.choices[0].finish_reason, 'stop');
  assert.ok(text.startsWith(stopped.choices[0].text));
});

test('completions.create: text and token prompts, echo, logprobs, streaming', async () => {
  const c = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 6, seed: 1, echo: true });
  assert.equal(c.object, 'text_completion');
  assert.ok(c.choices[0].text.startsWith('Once upon a time'));
  assert.ok(c.usage.completion_tokens <= 6);

  const ids = await client.completions.create({ model: MODEL, prompt: [[1, 2, 3], [4, 5]], max_tokens: 3, seed: 1, logprobs: 2 });
  assert.deepEqual(ids.choices.map((x) => x.index), [0, 1]);
  for (const choice of ids.choices) {
    const lp = choice.logprobs;
    assert.equal(lp.tokens.length, lp.token_logprobs.length);
    assert.ok(lp.tokens.length <= 3);
    assert.deepEqual(lp.text_offset, [...lp.text_offset].sort((a, b) => a - b));
    // Each position's two alternatives, under two names (partial characters are "bytes:\\x..").
    for (const top of lp.top_logprobs) assert.equal(Object.keys(top).length, 2);
  }

  const stream = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 6, seed: 1, stream: true });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0].text;
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  const plain = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 6, seed: 1 });
  assert.equal(text, plain.choices[0].text);
  assert.equal(finish, plain.choices[0].finish_reason);
});

test('models.list and models.retrieve', async () => {
  const list = await client.models.list();
  assert.deepEqual(list.data.map((m) => m.id), [MODEL]);
  const m = await client.models.retrieve(MODEL);
  assert.equal(m.object, 'model');
  assert.ok(m.context_length > 0);
  await assert.rejects(client.models.retrieve('no-such-model'), (e) => e.status === 404);
});
