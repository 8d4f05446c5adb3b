// Speculative decoding in the server is exact: the same requests sent to a server that
// speculates (prompt lookup or a draft model, and jump-forward) and to one started with
// `--draft none` must give identical answers — text, tool calls, log-probabilities (values and
// alternatives), finish reasons, token counts — greedy and sampled with a seed, through
// Completions, Chat Completions (json_schema, streamed) and Responses (a forced tool call),
// sent one by one and all at once. Then the counters: every usage object of the speculating
// server carries `speculative: {drafted_tokens, accepted_tokens}` (accepted <= drafted), the
// other's none; the sums over the requests equal the increase of /metrics' counters; drafts
// were accepted, and prompt lookup's too (accepted beyond what jump-forward forced).
//
//   node tests/server/speculative_test.mjs --on URL --off URL [--draft-model-url URL]
//        [--model NAME] [--seed N]
//
// --on: a server that speculates; --off: the same model with --draft none; --draft-model-url:
// one more speculating server, with --draft-model, held to the same answers. Every prompt and
// seed comes from --seed (fresh and printed when not given).
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { OpenAI } from './deps.mjs';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
const model = args.model ?? 'model-hf';
const baseSeed = args.seed !== undefined ? Number(args.seed) : randomInt(2 ** 31);
for (const u of [args.on, args.off, args['draft-model-url']].filter(Boolean))
  if (!/^http:\/\/(127\.|localhost|\[::1\])/.test(u)) throw new Error(`${u}: not a loopback URL`);
if (!args.on || !args.off) throw new Error('--on URL and --off URL are required');
console.log(`speculative test: --seed ${baseSeed} repeats this run`);

function rng(seed) {  // mulberry32
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const r = rng(baseSeed);
const WORDS = ('river stone lantern quiet orbit maple signal copper harbor violet thunder garden ' +
  'mirror falcon ember canyon whisper ledger saffron prism tundra beacon marble cobalt').split(' ');
const words = (n) => Array.from({ length: n }, () => WORDS[Math.floor(r() * WORDS.length)]).join(' ');
const seed = () => Math.floor(r() * 2 ** 31);
// A text that repeats itself: what prompt lookup drafts from (a file quoted back, an agent loop).
const repeated = (n) => { const line = words(6 + Math.floor(r() * 6)); return Array(n).fill(line).join('\n'); };

const SCHEMA = {
  type: 'object', additionalProperties: false, required: ['city', 'unit', 'days'],
  properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer' } },
};
const WEATHER_TOOL = {
  type: 'function', name: 'get_weather', description: 'Current weather in a city.',
  parameters: SCHEMA,
};

// Each request: a name and what to send; temperature 0 and 1 (seeded) alternate.
const requests = [];
// Random weights never write the prompt back by themselves; a negative frequency penalty makes
// them repeat what they have seen, so prompt lookup's drafts are kept (and the penalties, which
// sample on the host, are verified position by position too).
for (let i = 0; i < 6; ++i) {
  const temperature = i % 2 === 0 ? 0 : 1;
  const repetitive = i < 4;
  const prompt = repetitive ? repeated(3 + i) : words(4 + Math.floor(r() * 20));
  requests.push({ name: `completions ${i}${repetitive ? ', repeated text' : ''} (t=${temperature})`,
    kind: 'completions', body: { prompt, max_tokens: 40 + Math.floor(r() * 40), temperature, seed: seed(),
      logprobs: 3, frequency_penalty: repetitive ? -1 - r() : 0 } });
}
for (let i = 0; i < 4; ++i) {
  const temperature = i % 2 === 0 ? 0 : 1;
  requests.push({ name: `chat json_schema ${i} (t=${temperature})`, kind: 'chat',
    body: { messages: [{ role: 'user', content: `Weather as JSON: ${words(3 + i)}` }], temperature, seed: seed(),
      max_tokens: 96, max_reasoning_tokens: 4 + i, logprobs: true, top_logprobs: 2,
      response_format: { type: 'json_schema', json_schema: { name: 'weather', schema: SCHEMA, strict: true } } } });
}
for (let i = 0; i < 3; ++i) {
  const temperature = i % 2 === 0 ? 0 : 1;
  requests.push({ name: `responses forced call ${i} (t=${temperature})`, kind: 'responses',
    body: { input: `Call the tool: ${words(3 + i)}`, temperature, seed: seed(), max_output_tokens: 96,
      max_reasoning_tokens: 4, tools: [WEATHER_TOOL], tool_choice: 'required', store: false,
      top_logprobs: 2, include: ['message.output_text.logprobs'] } });
}
requests.push({ name: 'chat, repeated text (t=0)', kind: 'chat',
  body: { messages: [{ role: 'user', content: repeated(6) }], temperature: 0, seed: seed(), max_tokens: 64,
    max_reasoning_tokens: 8, logprobs: true, top_logprobs: 2 } });

const strip = (v) => (Array.isArray(v) ? v.map(strip) : v && typeof v === 'object'
  ? Object.fromEntries(Object.entries(v).filter(([k]) => !['id', 'call_id', 'created', 'created_at',
    'system_fingerprint'].includes(k)).map(([k, x]) => [k, strip(x)]))
  : v);

// Sends one request through the official SDK (Chat streamed, so that the streamed usage chunk is
// checked too); returns the answer to compare and the usage.
async function send(url, q) {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 });
  if (q.kind === 'completions') {
    const c = await client.completions.create({ model, ...q.body });
    return { answer: strip(c.choices), usage: c.usage };
  }
  if (q.kind === 'chat') {
    const stream = await client.chat.completions.create({ model, ...q.body, stream: true,
      stream_options: { include_usage: true } });
    const out = { content: '', reasoning: '', logprobs: [], finish: null };
    let usage = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (!choice) continue;
      out.content += choice.delta?.content ?? '';
      out.reasoning += choice.delta?.reasoning_content ?? '';
      out.logprobs.push(...(choice.logprobs?.content ?? []));
      out.finish = choice.finish_reason ?? out.finish;
    }
    if (q.body.response_format && out.finish === 'stop') JSON.parse(out.content);  // the schema's JSON
    return { answer: out, usage };
  }
  const resp = await client.responses.create({ model, ...q.body });
  return { answer: strip({ status: resp.status, output: resp.output }), usage: resp.usage };
}

function firstDifference(a, b, path = '') {
  if (JSON.stringify(a) === JSON.stringify(b)) return null;
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const d = firstDifference(a[k], b[k], `${path}.${k}`);
      if (d) return d;
    }
  }
  return `${path || '(root)'}: ${JSON.stringify(a)?.slice(0, 200)} vs ${JSON.stringify(b)?.slice(0, 200)}`;
}
const outputTokens = (u) => u.completion_tokens ?? u.output_tokens;

async function counters(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name) => {
    const m = text.match(new RegExp(`^${name} (\\d+)$`, 'm'));
    assert.ok(m, `/metrics has no ${name}`);
    return Number(m[1]);
  };
  return { drafted: value('gptoss_speculative_drafted_tokens_total'),
    accepted: value('gptoss_speculative_accepted_tokens_total'),
    forced: value('gptoss_speculative_forced_tokens_total') };
}

const failures = [];
const reference = [];
for (const q of requests) {
  const off = await send(args.off, q);
  assert.equal(off.usage.speculative, undefined, `${q.name}: --draft none reports usage.speculative`);
  reference.push(off);
}

// Checks one speculating server: every request one by one, then all at once.
async function check(label, url) {
  const before = await counters(url);
  const sums = { drafted: 0, accepted: 0 };
  const tally = (q, got) => {
    const s = got.usage.speculative;
    assert.ok(s && Number.isInteger(s.drafted_tokens) && Number.isInteger(s.accepted_tokens),
      `${label}, ${q.name}: usage.speculative missing: ${JSON.stringify(got.usage)}`);
    assert.ok(s.accepted_tokens <= s.drafted_tokens, `${label}, ${q.name}: ${JSON.stringify(s)}`);
    assert.ok(s.accepted_tokens < outputTokens(got.usage) || outputTokens(got.usage) === 0,
      `${label}, ${q.name}: ${s.accepted_tokens} accepted of ${outputTokens(got.usage)} output tokens`);
    sums.drafted += s.drafted_tokens;
    sums.accepted += s.accepted_tokens;
  };
  const compare = (how, q, got, ref) => {
    const d = firstDifference({ ...ref.answer, tokens: outputTokens(ref.usage) },
      { ...got.answer, tokens: outputTokens(got.usage) });
    if (d) failures.push(`${label}, ${how}, ${q.name}: ${d} (--draft none vs speculating)`);
  };
  let accepted = 0;
  for (const [i, q] of requests.entries()) {
    const got = await send(url, q);
    tally(q, got);
    compare('one by one', q, got, reference[i]);
    accepted += got.usage.speculative.accepted_tokens;
    console.log(`  ${label}: ${q.name}: ${outputTokens(got.usage)} tokens, ` +
      `drafted ${got.usage.speculative.drafted_tokens}, accepted ${got.usage.speculative.accepted_tokens}`);
  }
  const together = await Promise.all(requests.map((q) => send(url, q)));
  for (const [i, q] of requests.entries()) {
    tally(q, together[i]);
    compare('all at once', q, together[i], reference[i]);
  }
  const after = await counters(url);
  const delta = { drafted: after.drafted - before.drafted, accepted: after.accepted - before.accepted,
    forced: after.forced - before.forced };
  console.log(`${label}: /metrics drafted ${delta.drafted}, accepted ${delta.accepted} ` +
    `(forced ${delta.forced}); usage sums drafted ${sums.drafted}, accepted ${sums.accepted}`);
  assert.equal(delta.drafted, sums.drafted, `${label}: /metrics drafted vs the usage objects' sum`);
  assert.equal(delta.accepted, sums.accepted, `${label}: /metrics accepted vs the usage objects' sum`);
  assert.ok(delta.accepted > 0 && accepted > 0, `${label}: no drafted token was accepted`);
  assert.ok(delta.forced <= delta.accepted, `${label}: more forced than accepted`);
  return delta;
}

function report() {
  for (const f of failures.slice(0, 20)) console.log(`  differs: ${f}`);
  console.log(failures.length === 0 ? `every answer equals --draft none's (${requests.length} requests)`
    : `${failures.length} answers differ (--seed ${baseSeed} repeats this run)`);
  if (failures.length > 0) process.exit(1);
}
const on = await check('prompt lookup', args.on);
report();
assert.ok(on.forced > 0, 'jump-forward forced no token in json_schema / tool-call requests');
assert.ok(on.accepted > on.forced, 'prompt lookup had no drafted token accepted (beyond jump-forward)');
if (args['draft-model-url']) {
  await check('draft model', args['draft-model-url']);
  report();
}
