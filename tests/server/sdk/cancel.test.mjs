// A client that goes away, or DELETE, cancels the generation and frees its KV pages within a
// step. The files of this suite run one at a time (--test-concurrency=1), so nothing else runs.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { authHeaders, BASE_URL, client, metrics, MODEL } from './common.mjs';

const LONG = { model: MODEL, input: 'Write a very long story.', max_output_tokens: 100000, seed: 5 };

async function settles(what, predicate, ms = 3000) {
  const end = Date.now() + ms;
  for (;;) {
    const m = await metrics();
    if (predicate(m.value)) return m.value;
    if (Date.now() > end) assert.fail(`${what} within ${ms} ms:\n${m.text}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('aborting a stream cancels its generation and frees its pages', async () => {
  const before = (await metrics()).value('gptoss_kv_pages_used');
  const stream = await client.responses.create({ ...LONG, stream: true });
  for await (const event of stream) {
    if (event.type === 'response.in_progress') break;  // leaving the loop aborts the request
  }
  await settles('no running sequence', (v) => v('gptoss_running_sequences') === 0);
  await settles('pages back', (v) => v('gptoss_kv_pages_used') <= before);
});

test('a non-streaming client that disconnects cancels its generation', async () => {
  const controller = new AbortController();
  const pending = fetch(`${BASE_URL}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...authHeaders() },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Go on forever.' }], max_tokens: 100000 }),
    signal: controller.signal,
  });
  await settles('the generation running', (v) => v('gptoss_running_sequences') === 1);
  controller.abort();
  await assert.rejects(pending);
  await settles('no running sequence', (v) => v('gptoss_running_sequences') === 0);
});

test('a client that resets the connection right after its request cancels it', async () => {
  for (const [path, body] of [
    ['/v1/responses', { ...LONG }],
    ['/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'Go on forever.' }], max_tokens: 100000 }],
  ]) {
    const before = (await metrics()).value('gptoss_generated_tokens_total');
    const json = JSON.stringify(body);
    const url = new URL(BASE_URL);
    const socket = connect(Number(url.port), url.hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    const auth = authHeaders().Authorization;
    await new Promise((resolve) => socket.write(
      `POST ${path} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nAuthorization: ${auth}\r\n` +
      `Content-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`, resolve));
    socket.resetAndDestroy();  // RST, before the server has looked at the request
    await new Promise((r) => setTimeout(r, 300));
    await settles(`${path}: no running sequence`, (v) => v('gptoss_running_sequences') === 0 && v('gptoss_queue_length') === 0);
    // Uncancelled, it would run to the end of the context (~2000 tokens, seconds).
    const generated = (await metrics()).value('gptoss_generated_tokens_total') - before;
    assert.ok(generated < 200, `${path}: ${generated} tokens generated for a client that was gone`);
  }
});

test('a response being generated: retrieved, input listed, not continued; DELETE cancels it (response.failed)', async () => {
  const stream = await client.responses.create({ ...LONG, stream: true });
  let id;
  let last;
  for await (const event of stream) {
    if (event.type === 'response.created') {
      id = event.response.id;
      const got = await client.responses.retrieve(id);
      assert.equal(got.status, 'in_progress');
      // While it runs: its input is listed, and it cannot be continued yet.
      const items = await client.responses.inputItems.list(id);
      assert.equal(items.data.length, 1);
      assert.equal(items.data[0].role, 'user');
      await assert.rejects(
        client.responses.create({ model: MODEL, input: 'And then?', previous_response_id: id, max_output_tokens: 4 }),
        (e) => e.status === 400 && e.code === 'previous_response_in_progress',
      );
      await client.responses.delete(id);
    }
    last = event;
  }
  assert.equal(last.type, 'response.failed');
  assert.equal(last.response.status, 'failed');
  await settles('no running sequence', (v) => v('gptoss_running_sequences') === 0);
  await assert.rejects(client.responses.retrieve(id), (e) => e.status === 404);
});
