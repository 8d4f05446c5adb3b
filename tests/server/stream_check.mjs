// What a Responses event stream must look like for the official SDK's accumulating helpers
// (shared by the SDK suite and the load test).
import assert from 'node:assert/strict';

// The Responses stream event types this server may send (all from the official API).
const RESPONSE_EVENTS = new Set([
  'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
  'response.output_text.delta', 'response.output_text.done', 'response.reasoning_text.delta',
  'response.reasoning_text.done', 'response.function_call_arguments.delta',
  'response.function_call_arguments.done', 'response.content_part.done', 'response.output_item.done',
  'response.completed', 'response.incomplete', 'response.failed', 'error',
]);
const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);
const PART_OF = { message: 'output_text', reasoning: 'reasoning_text' };

// Checks a whole Responses event stream against the rules the SDK's helpers rely on, and
// returns the terminal event's response.
export function checkResponseStream(events) {
  assert.ok(events.length >= 3, `too few events: ${events.map((e) => e.type)}`);
  events.forEach((e, i) => {
    assert.ok(RESPONSE_EVENTS.has(e.type), `event ${i}: unexpected type ${e.type}`);
    assert.equal(e.sequence_number, i, `event ${i} (${e.type}): sequence_number`);
  });
  assert.equal(events[0].type, 'response.created');
  assert.equal(events[1].type, 'response.in_progress');
  const terminal = events.at(-1);
  assert.ok(TERMINAL.has(terminal.type), `last event is ${terminal.type}`);
  assert.equal(events.filter((e) => TERMINAL.has(e.type)).length, 1, 'exactly one terminal event');

  const items = [];
  const ids = new Set();
  const open = (e) => {
    const item = items[e.output_index];
    assert.ok(item, `${e.type}: no item at output_index ${e.output_index}`);
    assert.ok(!item.done, `${e.type}: item ${e.output_index} already done`);
    if ('item_id' in e) assert.equal(e.item_id, item.added.id, `${e.type}: item_id`);
    return item;
  };
  const part = (e, type) => {
    const item = open(e);
    const p = item.parts[e.content_index];
    assert.ok(p, `${e.type}: no content part ${e.content_index}`);
    assert.equal(p.type, type, `${e.type}: part type`);
    assert.ok(!p.done, `${e.type}: part already done`);
    return p;
  };
  events.forEach((e, i) => {
    switch (e.type) {
      case 'response.output_item.added': {
        assert.equal(e.output_index, items.length, 'output_index = items so far');
        assert.ok(typeof e.item.id === 'string' && e.item.id.length > 0, 'item id');
        assert.ok(!ids.has(e.item.id), `duplicate item id ${e.item.id}`);
        ids.add(e.item.id);
        if (e.item.type === 'function_call') {
          assert.ok(e.item.call_id?.length > 0, 'function call without call_id');
          assert.equal(e.item.arguments, '');
        } else {
          assert.ok(e.item.type in PART_OF, `item type ${e.item.type}`);
          assert.deepEqual(e.item.content, [], 'content announced empty');
        }
        items.push({ added: e.item, parts: [], args: '', done: false });
        break;
      }
      case 'response.content_part.added': {
        const item = open(e);
        assert.equal(e.content_index, item.parts.length, 'content_index = parts so far');
        assert.equal(e.part.type, PART_OF[item.added.type], 'part type fits the item');
        assert.equal(e.part.text, '');
        item.parts.push({ type: e.part.type, text: '', done: false });
        break;
      }
      case 'response.output_text.delta':
        part(e, 'output_text').text += e.delta;
        assert.ok(Array.isArray(e.logprobs), 'output_text.delta has logprobs');
        break;
      case 'response.reasoning_text.delta':
        part(e, 'reasoning_text').text += e.delta;
        break;
      case 'response.output_text.done':
        assert.equal(e.text, part(e, 'output_text').text, 'output_text.done = the deltas');
        break;
      case 'response.reasoning_text.done':
        assert.equal(e.text, part(e, 'reasoning_text').text, 'reasoning_text.done = the deltas');
        break;
      case 'response.function_call_arguments.delta': {
        const item = open(e);
        assert.equal(item.added.type, 'function_call');
        item.args += e.delta;
        break;
      }
      case 'response.function_call_arguments.done': {
        const item = open(e);
        assert.equal(e.arguments, item.args, 'arguments.done = the deltas');
        assert.equal(e.name, item.added.name);
        break;
      }
      case 'response.content_part.done': {
        const p = part(e, e.part.type);
        assert.equal(e.part.text, p.text);
        p.done = true;
        break;
      }
      case 'response.output_item.done': {
        const item = open(e);
        assert.equal(e.item.id, item.added.id);
        assert.equal(e.item.type, item.added.type);
        if (item.added.type === 'function_call') {
          assert.equal(e.item.call_id, item.added.call_id);
          assert.equal(e.item.arguments, item.args);
        }
        assert.ok(item.parts.every((p) => p.done), 'every part done before its item');
        item.done = true;
        item.final = e.item;
        break;
      }
      case 'error':
        assert.equal(events[i + 1]?.type, 'response.failed', 'error comes right before response.failed');
        break;
      default:
        break;
    }
  });
  assert.ok(items.every((item) => item.done), 'every item done before the end');
  const response = terminal.response;
  assert.deepEqual(response.output, items.map((item) => item.final), 'terminal response holds the items');
  return response;
}

// The events of a whole Responses SSE body; each frame's `event:` name must be its data's type.
export function parseSse(text) {
  const events = [];
  for (const frame of text.split('\n\n').filter((f) => f.trim())) {
    const lines = frame.split('\n');
    const name = lines.find((l) => l.startsWith('event: '))?.slice(7);
    const data = JSON.parse(lines.find((l) => l.startsWith('data: ')).slice(6));
    assert.equal(name, data.type, 'SSE event name = data.type');
    events.push(data);
  }
  return events;
}
