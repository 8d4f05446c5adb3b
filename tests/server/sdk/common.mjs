// Shared by the SDK tests: a client of the server under test (GPTOSS_SERVER_URL), and strict
// checks of what a stream must look like for the official SDK's accumulating helpers.
import assert from 'node:assert/strict';
import { OpenAI } from '../deps.mjs';
import { checkResponseStream, parseSse } from '../stream_check.mjs';

export { checkResponseStream };

export const BASE_URL = process.env.GPTOSS_SERVER_URL;
export const MODEL = process.env.GPTOSS_SERVER_MODEL ?? 'model-hf';
if (!BASE_URL) throw new Error('GPTOSS_SERVER_URL is not set (scripts/test-server.sh starts the server)');

// No retries: a test that expects an error must see the first answer.
export const client = new OpenAI({ baseURL: `${BASE_URL}/v1`, apiKey: process.env.GPTOSS_SERVER_API_KEY ?? 'unused', maxRetries: 0 });

export const authHeaders = () => ({ Authorization: `Bearer ${process.env.GPTOSS_SERVER_API_KEY ?? 'unused'}` });

export const WEATHER_TOOL = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather in a city.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city', 'unit'],
    additionalProperties: false,
  },
  strict: true,
};

// Reads a raw SSE stream of the Responses API (fetch), for tests that need the bytes.
export async function rawResponseEvents(body) {
  const res = await fetch(`${BASE_URL}/v1/responses`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...authHeaders() },
    body: JSON.stringify({ ...body, stream: true }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/event-stream/);
  return parseSse(await res.text());
}

// A Response without what differs between two runs of the same request (ids, times), and
// without what the SDK's parsing helpers add (parsed, output_parsed, output_text).
export function stripIds(value) {
  if (Array.isArray(value)) return value.map(stripIds);
  if (value && typeof value === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(value)) {
      if (['id', 'call_id', 'created_at', 'created', 'output_text', 'parsed', 'output_parsed'].includes(k)) continue;
      out[k] = stripIds(v);
    }
    return out;
  }
  return value;
}

export async function metrics() {
  const res = await fetch(`${BASE_URL}/metrics`, { headers: authHeaders() });
  const text = await res.text();
  const value = (name) => Number(text.match(new RegExp(`^${name} (\\S+)$`, 'm'))?.[1]);
  return { text, value };
}
