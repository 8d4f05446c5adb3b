"""Harmony render/parse through the bindings, and the high-level generate() and chat()."""

import json
import unittest

from support import PROMPT_TEXT, SHARED, gptoss, model


def shared_case(name):
    cases = json.loads((SHARED / "conformance/harmony/cases.json").read_text())["cases"]
    return next(c for c in cases if c["name"] == name)


class RenderTest(unittest.TestCase):
    def test_matches_shared_conformance_case(self):
        case = shared_case("simple_convo")
        tokens = gptoss.render(model().tokenizer, {"messages": case["input"]["messages"]},
                               auto_drop_analysis=case["input"]["config"]["auto_drop_analysis"])
        self.assertEqual(tokens, case["expected"]["tokens"])

    def test_equals_encoding_the_text_with_specials(self):
        tok = model().tokenizer
        conversation = [{"role": "user", "content": "What is 2 + 2?"}]
        self.assertEqual(gptoss.render(tok, conversation),
                         tok.encode(PROMPT_TEXT, allow_special=True))
        without = gptoss.render(tok, conversation, for_completion=False)
        self.assertEqual(tok.decode(without), PROMPT_TEXT[:-len("<|start|>assistant")])

    def test_malformed_conversation_raises(self):
        for bad in ('{"messages": [', [{"role": "wizard", "content": "x"}], [{"content": "x"}]):
            with self.assertRaises(gptoss.InvalidArgumentError, msg=repr(bad)) as cm:
                gptoss.render(model().tokenizer, bad)
            self.assertTrue(cm.exception.message)


class StreamParserTest(unittest.TestCase):
    def test_streams_channels_and_messages(self):
        tok = model().tokenizer
        completion = ("<|channel|>analysis<|message|>Think.<|end|>"
                      "<|start|>assistant<|channel|>final<|message|>Héllo 🎉<|return|>")
        deltas = {}
        with gptoss.StreamParser(tok) as parser:
            for t in tok.encode(completion, allow_special=True):
                state = parser.process(t)
                if state.content_delta:
                    deltas[state.channel] = deltas.get(state.channel, "") + state.content_delta
            self.assertEqual(len(parser.messages), 2)
            messages = parser.finish()
        self.assertEqual(deltas, {"analysis": "Think.", "final": "Héllo 🎉"})
        self.assertEqual([m["channel"] for m in messages], ["analysis", "final"])
        self.assertEqual(messages[1]["content"][0]["text"], "Héllo 🎉")

    def test_strict_parser_rejects_malformed_header(self):
        tok = model().tokenizer
        with gptoss.StreamParser(tok, first_role=None, strict=True) as parser:
            with self.assertRaises(gptoss.InvalidArgumentError):
                for t in tok.encode("<|start|><|start|><|message|>x<|end|>", allow_special=True):
                    parser.process(t)


class GenerateTest(unittest.TestCase):
    def test_generate_matches_low_level_loop(self):
        tok = model().tokenizer
        got = list(model().generate("What is 2 + 2?", max_tokens=10, temperature=0, constrain=False))
        self.assertTrue(1 <= len(got) <= 10)
        self.assertTrue(all(isinstance(t, gptoss.Token) for t in got))
        with gptoss.Context(model(), context_length=8192) as ctx, \
                gptoss.Sampler(temperature=0) as s:
            ctx.append(gptoss.render(tok, gptoss._generate._conversation(
                [{"role": "user", "content": "What is 2 + 2?"}], "medium", None)))
            expected = []
            for _ in range(len(got)):
                expected.append(ctx.sample(s))
                ctx.append(expected[-1:])
        self.assertEqual([t.id for t in got], expected)

    def test_raw_generate_decodes_text(self):
        got = list(model().generate("Once upon a time", max_tokens=8, temperature=0,
                                    harmony_format=False))
        ids = [t.id for t in got]
        self.assertEqual("".join(t.text for t in got),
                         model().tokenizer.decode_bytes(ids).decode("utf-8", "replace"))
        self.assertTrue(all(t.channel is None for t in got))

    def test_same_seed_same_tokens(self):
        a = [t.id for t in model().generate("Hi", max_tokens=8, temperature=1.0, seed=7)]
        b = [t.id for t in model().generate("Hi", max_tokens=8, temperature=1.0, seed=7)]
        self.assertEqual(a, b)

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            list(model().generate("Hi", max_tokens=0))
        with self.assertRaises(gptoss.InvalidArgumentError):
            list(model().generate("Hi", max_tokens=2, top_p=0.0))
        with self.assertRaises(TypeError):
            list(model().generate("Hi", max_tokens=2, no_such_option=1))

    def test_chat_returns_parsed_turn(self):
        seen = []
        response = model().chat([{"role": "user", "content": "Hello"}], max_tokens=6,
                                temperature=0, on_token=seen.append)
        self.assertIsInstance(response, gptoss.ChatResponse)
        self.assertEqual(response.tokens, [t.id for t in seen])
        self.assertTrue(1 <= len(response.tokens) <= 6)
        self.assertIsInstance(response.messages, list)
        # text and reasoning split the parsed messages by channel: the answer is the final
        # channel; analysis and commentary preambles (no recipient) are reasoning.
        def body(m):
            return "".join(p["text"] for p in m["content"] if p["type"] == "text")
        self.assertEqual(response.text, "".join(body(m) for m in response.messages
                                                if m.get("channel") in (None, "final")
                                                and not m.get("recipient")))
        self.assertEqual(response.reasoning, "".join(body(m) for m in response.messages
                                                     if m.get("channel") not in (None, "final")
                                                     and not m.get("recipient")))
        self.assertFalse(response.closed_by_budget)  # free text gets no budget
        # Tokens that render back: the conversation plus the reply renders without error.
        gptoss.render(model().tokenizer, [{"role": "user", "content": "Hello"}] + response.messages)


if __name__ == "__main__":
    unittest.main()
