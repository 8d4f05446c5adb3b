// Load test: N concurrent streaming clients for S seconds against a running gptoss-server
// (loopback only). Every stream must be well-formed (Responses events checked one by one,
// Chat and Completions through the official SDK's stream helpers), no request may fail, and
// the server's RSS must stay flat once warmed up.
//
//   node tests/server/load_test.mjs --url http://127.0.0.1:8000 --model NAME \
//        [--clients 16] [--seconds 120] [--pid SERVER_PID] [--api-key KEY]
import { readFileSync } from 'node:fs';
import { OpenAI } from './deps.mjs';
import { checkResponseStream, parseSse } from './stream_check.mjs';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
const url = args.url;
const model = args.model ?? 'model-hf';
const clients = Number(args.clients ?? 16);
const seconds = Number(args.seconds ?? 120);
const pid = args.pid ? Number(args.pid) : null;
const apiKey = args['api-key'] ?? 'unused';
if (!url || !/^http:\/\/(127\.|localhost|\[::1\])/.test(url)) throw new Error('--url must be a loopback URL');

const client = new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 });
const deadline = Date.now() + seconds * 1000;
const stats = { responses: 0, chat: 0, completions: 0, tokens: 0, errors: [] };

function rssKiB() {
  if (!pid) return null;
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  return m ? Number(m[1]) : null;
}

async function responsesStream(seed, maxTokens) {
  const res = await fetch(`${url}/v1/responses`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model, input: `Request ${seed}: tell me something.`, max_output_tokens: maxTokens, seed, stream: true, store: seed % 2 === 0 }),
  });
  if (res.status !== 200) throw new Error(`responses: HTTP ${res.status} ${await res.text()}`);
  const final = checkResponseStream(parseSse(await res.text()));
  if (final.status === 'failed') throw new Error(`responses: failed: ${JSON.stringify(final.error)}`);
  stats.responses++;
  stats.tokens += final.usage.output_tokens;
}

async function chatStream(seed, maxTokens) {
  const stream = client.chat.completions.stream({
    model, seed, max_tokens: maxTokens, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: `Request ${seed}.` }],
  });
  const final = await stream.finalChatCompletion();
  if (!final.choices[0].finish_reason) throw new Error('chat: no finish_reason');
  stats.chat++;
  stats.tokens += final.usage.completion_tokens;
}

async function completionsStream(seed, maxTokens) {
  const stream = await client.completions.create({
    model, prompt: `Request ${seed}:`, max_tokens: maxTokens, seed, stream: true, stream_options: { include_usage: true },
  });
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    finish = chunk.choices[0]?.finish_reason ?? finish;
    usage = chunk.usage ?? usage;
  }
  if (!finish || !usage) throw new Error('completions: no finish_reason or usage');
  stats.completions++;
  stats.tokens += usage.completion_tokens;
}

async function worker(id) {
  const kinds = [responsesStream, chatStream, completionsStream];
  for (let n = 0; Date.now() < deadline; ++n) {
    const seed = id * 100000 + n;
    const kind = kinds[(id + n) % kinds.length];
    try {
      await kind(seed, 16 + (seed % 33));
    } catch (e) {
      stats.errors.push(`${kind.name} (client ${id}): ${e.message}`);
    }
  }
}

const samples = [];
const sampler = setInterval(() => samples.push({ t: Date.now(), rss: rssKiB() }), 1000);
const start = Date.now();
await Promise.all(Array.from({ length: clients }, (_, i) => worker(i)));
clearInterval(sampler);
samples.push({ t: Date.now(), rss: rssKiB() });

const elapsed = (Date.now() - start) / 1000;
const requests = stats.responses + stats.chat + stats.completions;
console.log(`load test: ${clients} clients, ${elapsed.toFixed(1)} s: ${requests} streams (${stats.responses} responses, ` +
  `${stats.chat} chat, ${stats.completions} completions), ${stats.tokens} tokens, ${stats.errors.length} errors`);
let failed = stats.errors.length > 0 || requests < clients;
for (const e of stats.errors.slice(0, 10)) console.log(`  error: ${e}`);

if (pid) {
  // Warm-up: the first third (at least 5 s) fills the prefix cache, touches the KV pool's pages
  // and starts the HTTP threads. From then until the deadline RSS may move by allocator noise
  // only; once idle again (the server trims its heap when nothing runs) it must be back near
  // where warm-up left it. A leak grows with the work done and fails both.
  await new Promise((r) => setTimeout(r, 2000));
  const idle = rssKiB();
  const warm = start + Math.max(5000, (seconds * 1000) / 3);
  const steady = samples.filter((s) => s.t >= warm && s.t <= deadline && s.rss);
  if (steady.length >= 2) {
    const first = steady.slice(0, 5).map((s) => s.rss).sort((a, b) => a - b);
    const base = first[Math.floor(first.length / 2)];  // a median: one sample may catch a step's buffers
    const peak = Math.max(...steady.map((s) => s.rss));
    const allowed = Math.max(24 * 1024, base * 0.1);
    const mib = (k) => (k / 1024).toFixed(1);
    console.log(`RSS after warm-up ${mib(base)} MiB, peak under load ${mib(peak)} MiB, idle after ${mib(idle)} MiB ` +
      `(allowed +${mib(allowed)} MiB)`);
    if (peak - base > allowed || idle - base > allowed) failed = true;
  }
  if (args['print-rss']) console.log(samples.map((s) => Math.round((s.rss ?? 0) / 1024)).join(' '));
}
process.exit(failed ? 1 : 0);
