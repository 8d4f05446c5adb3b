// The server as a process: drain on SIGTERM, the queue bound, authentication, refused
// command lines, request size limits, JSON logs, /bench.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { post, startServer } from './server.mjs';

const LONG_CHAT = { model: 'model-hf', messages: [{ role: 'user', content: 'Talk.' }], max_tokens: 400, seed: 1 };

test('SIGTERM drains: the running stream finishes, new requests get 503, exit status 0', async () => {
  const s = await startServer(['--port', '0']);
  // Raw completions stream token by token (the random model's Harmony would stream nothing
  // until its end without constraints).
  const res = await fetch(`${s.url}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'model-hf', prompt: 'Talk.', max_tokens: 400, seed: 1, stream: true }),
  });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  await reader.read();  // the stream has begun
  s.proc.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 200));
  const late = await post(s.url, '/v1/chat/completions', LONG_CHAT);
  assert.equal(late.status, 503, late.text);
  assert.equal(JSON.parse(late.text).error.code, 'server_shutting_down');
  const health = await fetch(`${s.url}/health`);
  assert.equal(health.status, 503);
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  assert.match(text, /"finish_reason":"(length|stop)"/);
  assert.ok(text.trimEnd().endsWith('data: [DONE]'), 'the stream ended properly');
  assert.equal(await s.exited, 0);
});

// Polls /metrics until the server runs `running` generations and queues `queued`.
async function waitForLoad(url, running, queued) {
  const deadline = Date.now() + 30000;
  for (;;) {
    const text = await (await fetch(`${url}/metrics`)).text();
    const value = (name) => Number(text.match(new RegExp(`^${name} (\\d+)$`, 'm'))?.[1]);
    if (value('gptoss_running_sequences') === running && value('gptoss_queue_length') === queued) return;
    if (Date.now() > deadline) throw new Error(`no ${running} running / ${queued} queued in 30 s:\n${text}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('past --max-queue: 429 with Retry-After', async () => {
  const s = await startServer(['--port', '0', '--max-running', '1', '--max-queue', '1', '--step-tokens', '64']);
  const body = { ...LONG_CHAT, max_tokens: 100000 };
  const controllers = [new AbortController(), new AbortController()];
  try {
    const send = (c) => fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), signal: c.signal,
    }).catch(() => null);
    // One at a time, each seen by the server itself (one running, then one waiting), so the
    // third finds the server full; a fixed sleep raced both ways on a loaded machine. Each
    // runs ~950 tokens.
    const held = [send(controllers[0])];
    await waitForLoad(s.url, 1, 0);
    held.push(send(controllers[1]));
    await waitForLoad(s.url, 1, 1);
    const third = await post(s.url, '/v1/chat/completions', body);
    assert.equal(third.status, 429, third.text);
    assert.equal(third.headers.get('retry-after'), '1');
    assert.equal(JSON.parse(third.text).error.code, 'rate_limit_exceeded');
    controllers.forEach((c) => c.abort());
    await Promise.all(held);
    s.proc.kill('SIGTERM');
    assert.equal(await s.exited, 0);
  } finally {
    controllers.forEach((c) => c.abort());
    s.proc.kill('SIGKILL');  // a failed assertion must not leave a server behind (no-op after exit)
  }
});

test('--api-key: Bearer required on the API, not on health checks', async () => {
  const s = await startServer(['--port', '0', '--api-key', 'k123']);
  const none = await fetch(`${s.url}/v1/models`);
  assert.equal(none.status, 401);
  assert.equal((await none.json()).error.code, 'invalid_api_key');
  const wrong = await fetch(`${s.url}/v1/models`, { headers: { Authorization: 'Bearer k124' } });
  assert.equal(wrong.status, 401);
  const right = await fetch(`${s.url}/v1/models`, { headers: { Authorization: 'Bearer k123' } });
  assert.equal(right.status, 200);
  assert.equal((await fetch(`${s.url}/health`)).status, 200);
  assert.equal((await fetch(`${s.url}/metrics`)).status, 401);
  s.proc.kill('SIGTERM');
  assert.equal(await s.exited, 0);
});

test('refused command lines exit 2 with a message; an unusable store exits 1', async () => {
  const open = await startServer(['--host', '0.0.0.0', '--port', '0'], { waitReady: false });
  assert.equal(await open.exited, 2);
  assert.match(open.stderr(), /without authentication/);
  const badPort = await startServer(['--port', 'eighty'], { waitReady: false });
  assert.equal(await badPort.exited, 2);
  assert.match(badPort.stderr(), /--port/);
  const store = await startServer(['--port', '0', '--store', '/proc/no/such/dir/r.sqlite3'], { waitReady: false });
  assert.equal(await store.exited, 1);
  assert.match(store.stderr(), /SQLite/);
  const pg = await startServer(['--port', '0', '--store', 'postgresql://nobody@/none?host=/nonexistent'], { waitReady: false });
  assert.equal(await pg.exited, 1);
  assert.match(pg.stderr(), /PostgreSQL/);
  const insecure = await startServer(['--host', '0.0.0.0', '--port', '0', '--insecure-no-auth']);
  assert.ok(insecure.url);
  insecure.proc.kill('SIGTERM');
  assert.equal(await insecure.exited, 0);
});

test('request bodies over --max-body-bytes get 413 in the OpenAI shape', async () => {
  const s = await startServer(['--port', '0', '--max-body-bytes', '2048']);
  const big = await post(s.url, '/v1/responses', { model: 'model-hf', input: 'x'.repeat(5000) });
  assert.equal(big.status, 413);
  assert.equal(JSON.parse(big.text).error.code, 'request_too_large');
  s.proc.kill('SIGTERM');
  assert.equal(await s.exited, 0);
});

test('--log-format json writes one JSON object per line, with an access log', async () => {
  const dir = (await import('./server.mjs')).tempDir();
  const log = path.join(dir, 'server.log');
  const s = await startServer(['--port', '0', '--log-format', 'json', '--log-file', log]);
  await fetch(`${s.url}/v1/models`);
  s.proc.kill('SIGTERM');
  assert.equal(await s.exited, 0);
  const lines = readFileSync(log, 'utf8').trim().split('\n');
  assert.ok(lines.length >= 3);
  for (const line of lines) {
    const entry = JSON.parse(line);
    assert.ok(entry.time && entry.level && typeof entry.message === 'string');
  }
  assert.ok(lines.some((l) => JSON.parse(l).message.startsWith('GET /v1/models 200')));
});

test('/bench is off by default and measures n streams when enabled', async () => {
  const off = await startServer(['--port', '0']);
  assert.equal((await fetch(`${off.url}/bench`)).status, 404);
  off.proc.kill('SIGTERM');
  await off.exited;
  const on = await startServer(['--port', '0', '--enable-bench']);
  const res = await fetch(`${on.url}/bench?n=4&max_new_tokens=16`);
  assert.equal(res.status, 200);
  const b = await res.json();
  assert.equal(b.n, 4);
  assert.equal(b.streams.length, 4);
  assert.ok(b.streams.every((s) => s.tokens === 16));
  assert.equal(b.output_tokens, 64);
  assert.ok(b.aggregate_tokens_per_second > 0);
  assert.equal((await fetch(`${on.url}/bench?n=0`)).status, 400);
  // More streams than --max-queue (64) could never be admitted: 400, not a retryable 429.
  assert.equal((await fetch(`${on.url}/bench?n=65&max_new_tokens=1`)).status, 400);
  on.proc.kill('SIGTERM');
  assert.equal(await on.exited, 0);
});

test('examples/bench/server_bench.py measures a running server, every request with its own prompt', async () => {
  const s = await startServer(['--port', '0']);
  const check = new URL('../server_bench_check.py', import.meta.url).pathname;
  execFileSync('python3', [check, '--url', s.url, '--model', 'model-hf'], { encoding: 'utf8', stdio: 'pipe' });
  s.proc.kill('SIGTERM');
  assert.equal(await s.exited, 0);
});
