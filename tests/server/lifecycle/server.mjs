// Starting gptoss-server processes of their own for the lifecycle tests.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import path from 'node:path';

const BIN = process.env.GPTOSS_SERVER_BIN;
const MODEL = process.env.GPTOSS_TEST_MODEL;
const TOKENIZER = process.env.GPTOSS_TEST_TOKENIZER;
if (!BIN || !MODEL || !TOKENIZER) throw new Error('GPTOSS_SERVER_BIN, GPTOSS_TEST_MODEL and GPTOSS_TEST_TOKENIZER must be set');

export function tempDir() {
  return mkdtempSync(path.join(process.env.GPTOSS_TEST_TMP ?? '/tmp', 'lifecycle-'));
}

// Runs the server with `args` after the model flags; resolves when it is ready (or when it
// exits, for tests of refused command lines). `exited` resolves to the exit code.
export function startServer(args, { waitReady = true } = {}) {
  const dir = tempDir();
  const proc = spawn(BIN, ['--model', MODEL, '--tokenizer', TOKENIZER, '--context', '1024',
    '--store', path.join(dir, 'r.sqlite3'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve(code ?? signal)));
  return new Promise((resolve, reject) => {
    const done = () => resolve({ proc, url: stderr.match(/ready on (http:\/\/\S+)/)?.[1], stderr: () => stderr, exited, dir });
    proc.stderr.on('data', (d) => {
      stderr += d;
      if (waitReady && /ready on http/.test(stderr)) done();
    });
    exited.then(() => (waitReady && !/ready on/.test(stderr) ? done() : null));
    if (!waitReady) exited.then(done);
    setTimeout(() => reject(new Error(`server not ready in 30 s:\n${stderr}`)), 30000).unref();
  });
}

export async function post(url, pathname, body, headers = {}) {
  const res = await fetch(`${url}${pathname}`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}
