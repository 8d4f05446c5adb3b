// Deterministic serving: a request's answer does not depend on what else runs with it. N
// streaming clients send their own requests at once (their own prompts, seeds, temperatures 0
// and 1, tools, stop strings, reasoning limits, prompts long enough to be prefilled in several
// chunks and to cross the 128-token sliding window); then each request is sent again alone and
// its answer must be identical: text, reasoning, tool calls, log-probabilities, finish reason,
// token counts. Three rounds: Chat Completions, Responses, and a second Responses turn through
// `previous_response_id`, whose prompt extends the first turn's and so starts from the prefix
// cache (usage reports the tokens it reused). Requests sent alone find their own prompt in the
// prefix cache or, once evicted, run cold: both must give the concurrent run's answer.
//
//   node tests/server/determinism_test.mjs --url http://127.0.0.1:8000 [--model NAME]
//        [--clients 16] [--seed N] [--api-key KEY]
//
// Every prompt, seed and option comes from --seed (fresh and printed when not given), so a
// failing run is repeated with the same --seed. The server's /health must declare the guarantee
// (determinism.batch_invariant).
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { OpenAI } from './deps.mjs';
import { checkResponseStream, parseSse } from './stream_check.mjs';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
const url = args.url;
const model = args.model ?? 'model-hf';
const clients = Number(args.clients ?? 16);
const apiKey = args['api-key'] ?? 'unused';
const baseSeed = args.seed !== undefined ? Number(args.seed) : randomInt(2 ** 31);
if (!url || !/^http:\/\/(127\.|localhost|\[::1\])/.test(url)) throw new Error('--url must be a loopback URL');
console.log(`determinism test: ${clients} clients, --seed ${baseSeed} repeats this run`);

const client = new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 });

// mulberry32: a small PRNG, so that --seed alone fixes every request of the run.
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
const WORDS = ('river stone lantern quiet orbit maple signal copper harbor violet thunder garden ' +
  'mirror falcon ember canyon whisper ledger saffron prism tundra beacon marble cobalt').split(' ');
const WEATHER_TOOL = {
  type: 'function', name: 'get_weather', description: 'Current weather in a city.',
  parameters: {
    type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city', 'unit'], additionalProperties: false,
  },
};

// What client i asks in a round: everything drawn from the run's seed.
function requestOf(round, i) {
  const r = rng(baseSeed * 7919 + round * 131 + i);
  // Most prompts are short; every fourth runs to several hundred tokens, past the step's token
  // budget (prefilled in chunks whose sizes depend on what else is in the step) and past the
  // sliding window.
  const words = i % 4 === 3 ? 250 + Math.floor(r() * 200) : 3 + Math.floor(r() * 30);
  const text = Array.from({ length: words }, () => WORDS[Math.floor(r() * WORDS.length)]).join(' ');
  return {
    prompt: `Client ${i}, round ${round}: ${text}`,
    seed: Math.floor(r() * 2 ** 31),
    temperature: i % 2 === 0 ? 0 : 1,
    // A forced call's shortest complete output takes 64 tokens (the server refuses less).
    maxTokens: i % 6 === 0 ? 72 : 24 + Math.floor(r() * 24),
    tools: i % 3 === 0 ? [WEATHER_TOOL] : undefined,
    toolChoice: i % 6 === 0 ? 'required' : undefined,
    // A short reasoning limit makes most answers reach the final channel, whose tokens carry
    // log-probabilities.
    maxReasoning: i % 3 === 1 ? undefined : 6 + Math.floor(r() * 6),
    stop: i % 5 === 2 ? [WORDS[Math.floor(r() * WORDS.length)].slice(0, 2)] : undefined,
  };
}

// One streamed Chat Completion, accumulated into what the client sees.
async function chat(q) {
  const stream = await client.chat.completions.create({
    model, seed: q.seed, temperature: q.temperature, max_tokens: q.maxTokens, stream: true,
    stream_options: { include_usage: true }, logprobs: true, top_logprobs: 2, stop: q.stop,
    max_reasoning_tokens: q.maxReasoning,
    tools: q.tools?.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })),
    tool_choice: q.toolChoice,
    messages: [{ role: 'user', content: q.prompt }],
  });
  const out = { content: '', reasoning: '', tools: [], logprobs: [], finish: null, usage: null };
  for await (const chunk of stream) {
    if (chunk.usage) out.usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    out.content += choice.delta?.content ?? '';
    out.reasoning += choice.delta?.reasoning_content ?? '';
    for (const call of choice.delta?.tool_calls ?? []) {
      out.tools[call.index] ??= { name: '', arguments: '' };
      out.tools[call.index].name += call.function?.name ?? '';
      out.tools[call.index].arguments += call.function?.arguments ?? '';
    }
    out.logprobs.push(...(choice.logprobs?.content ?? []));
    out.finish = choice.finish_reason ?? out.finish;
  }
  return {
    answer: { ...out, usage: undefined },
    tokens: out.usage.completion_tokens,
    cached: out.usage.prompt_tokens_details?.cached_tokens ?? 0,
  };
}

// One streamed Response (raw SSE, every event checked); previousId continues a stored one.
async function responses(q, previousId) {
  const res = await fetch(`${url}/v1/responses`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({
      model, input: q.prompt, seed: q.seed, temperature: q.temperature, max_output_tokens: q.maxTokens,
      stream: true, store: true, previous_response_id: previousId, stop: q.stop,
      max_reasoning_tokens: q.maxReasoning, tools: q.tools, tool_choice: q.toolChoice,
      top_logprobs: 2, include: ['message.output_text.logprobs'],
    }),
  });
  assert.equal(res.status, 200, `responses: HTTP ${res.status}`);
  const final = checkResponseStream(parseSse(await res.text()));
  assert.notEqual(final.status, 'failed', `responses: failed: ${JSON.stringify(final.error)}`);
  const strip = (v) => (Array.isArray(v) ? v.map(strip) : v && typeof v === 'object'
    ? Object.fromEntries(Object.entries(v).filter(([k]) => !['id', 'call_id'].includes(k)).map(([k, x]) => [k, strip(x)]))
    : v);
  return {
    answer: { status: final.status, incomplete: final.incomplete_details, output: strip(final.output) },
    tokens: final.usage.output_tokens,
    cached: final.usage.input_tokens_details?.cached_tokens ?? 0,
    id: final.id,
  };
}

// Where two answers first differ, for the failure message.
function firstDifference(a, b, path = '') {
  if (JSON.stringify(a) === JSON.stringify(b)) return null;
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const d = firstDifference(a[k], b[k], `${path}.${k}`);
      if (d) return d;
    }
  }
  return `${path || '(root)'}: ${JSON.stringify(a)?.slice(0, 160)} (together) vs ${JSON.stringify(b)?.slice(0, 160)} (alone)`;
}

const failures = [];
// The guarantee the server declares must be the one this test holds it to.
const health = await (await fetch(`${url}/health`)).json();
console.log(`/health determinism: ${JSON.stringify(health.determinism)}`);
if (health.determinism?.batch_invariant !== true)
  failures.push(`/health does not declare batch invariance on the ${health.determinism?.kernels} kernels`);
// Runs `send(i)` for every client at once, then for each client alone, and compares.
async function round(name, send) {
  const started = Date.now();
  const together = await Promise.all(Array.from({ length: clients }, (_, i) => send(i)));
  let cachedTogether = 0;
  let cachedAlone = 0;
  let tokens = 0;
  for (let i = 0; i < clients; ++i) {
    const alone = await send(i);
    cachedTogether += together[i].cached;
    cachedAlone += alone.cached;
    tokens += together[i].tokens;
    const difference = firstDifference({ ...together[i].answer, tokens: together[i].tokens },
      { ...alone.answer, tokens: alone.tokens });
    if (difference) failures.push(`${name}, client ${i}: ${difference}`);
  }
  console.log(`${name}: ${clients} clients, ${tokens} tokens, ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
    `prompt tokens from the prefix cache: ${cachedTogether} together, ${cachedAlone} alone`);
  return together;
}

await round('chat completions', (i) => chat(requestOf(0, i)));
const first = await round('responses', (i) => responses(requestOf(1, i)));
// The second turn continues the first (the same first-turn response each time, so together and
// alone see the same conversation): its prompt starts with the first turn's tokens.
const turn2 = await round('responses, previous_response_id', (i) => responses(requestOf(2, i), first[i].id));
if (turn2.every((r) => r.cached === 0)) failures.push('no second turn found its conversation in the prefix cache');

for (const f of failures.slice(0, 20)) console.log(`  differs: ${f}`);
console.log(failures.length === 0 ? 'every answer alone equals its answer together'
  : `${failures.length} answers differ (--seed ${baseSeed} repeats this run)`);
process.exit(failures.length === 0 ? 0 : 1);
