// The examples of docs/server.md run as written: every `curl` block and the Node SDK block,
// against a server started here under the docs' model name.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { startServer, tempDir } from './server.mjs';

const repo = new URL('../../../', import.meta.url).pathname;
const doc = readFileSync(path.join(repo, 'docs/server.md'), 'utf8');
const blocks = (lang) => [...doc.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]);

test('docs/server.md: the curl and SDK examples run', async () => {
  const s = await startServer(['--port', '0', '--model-name', 'gpt-oss-tiny']);
  const local = (code) => code.replaceAll('http://127.0.0.1:8000', s.url);
  const curls = blocks('sh').filter((b) => b.trimStart().startsWith('curl'));
  assert.ok(curls.length >= 5, 'the curl examples');
  for (const block of curls) {
    const out = execFileSync('bash', ['-c', `set -euo pipefail\n${local(block)}`], { encoding: 'utf8' });
    if (block.includes('"stream": true')) {
      assert.match(out, /event: response\.(completed|incomplete)/, out);
    } else {
      const body = JSON.parse(out);
      assert.ok(body.error == null, `${block}\n${out}`);
    }
  }
  const [sdk] = blocks('js');
  const sdkEntry = path.join(repo, 'third_party/node/node_modules/openai/index.mjs');
  const file = path.join(tempDir(), 'example.mjs');
  writeFileSync(file, local(sdk).replace("from 'openai'", `from '${sdkEntry}'`));
  const out = execFileSync('node', [file], { encoding: 'utf8' });
  assert.match(out, /(completed|incomplete)/);
  s.proc.kill('SIGTERM');
  assert.equal(await s.exited, 0);
});
