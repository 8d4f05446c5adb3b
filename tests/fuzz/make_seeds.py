#!/usr/bin/env python3
"""Writes the seed corpora and dictionaries of the fuzz harnesses (tests/fuzz/corpus/<name>/,
tests/fuzz/dict/<name>.dict) from the project's own data:

  safetensors, gguf   the "micro" synthetic checkpoint of gptoss-make-model (every tensor kind,
                      about 12 KB), sharded and with the 20b's real config.json as variants;
  tokenizer_json      the real tokenizer.json with its vocabulary and merges cut to a few
                      entries (a complete one is 27 MB);
  tokenizer_codec     texts of the shared tokenizer conformance cases (one per category);
  harmony_parser      token sequences of the shared Harmony conformance cases;
  harmony_render      conversations of the shared Harmony conformance cases;
  json_schema         the JSON Schemas of the constrained-decoding tests (tests/constrain), the
                      tool parameters and formats of the server's tests and docs, each followed
                      by a NUL and a few bytes that choose tokens to accept;
  server_request      request bodies of the server's parsing tests (tests/server/parse_test.cpp)
                      and of docs/server.md.

Seeds are named seed-*. Two other kinds of corpus files are never touched here: regress-*,
inputs that once failed, and cov-*, inputs distilled from local campaigns (each adds coverage
edges the rest lacks), made with

  build-fuzz/bin/fuzz-NAME -merge=1 -use_counters=0 -max_len=65536 \
      tests/fuzz/corpus/NAME build-fuzz/out/NAME/corpus   # then prefix the new files "cov-"

Usage (from the repository root, after a release build):

  python3 tests/fuzz/make_seeds.py --make-model build/bin/gptoss-make-model \\
      [--shared ../shared] [--tokenizer-json third_party/tokenizer/tokenizer.json]
  python3 tests/fuzz/make_seeds.py --only json_schema,server_request   # no build needed
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import struct
import subprocess
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
FILE_SEPARATOR = b"\n--next-file--\n"  # tests/fuzz/harnesses/safetensors.cpp


def write_seeds(name, seeds):
    """Replaces the seed-* files of corpus/<name> with `seeds` ({name: bytes})."""
    folder = HERE / "corpus" / name
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("seed-*"):
        old.unlink()
    for seed_name, data in seeds.items():
        (folder / f"seed-{seed_name}").write_bytes(data)
    print(f"corpus/{name}: {len(seeds)} seeds, {sum(map(len, seeds.values()))} bytes")


def write_dict(name, entries):
    """A libFuzzer dictionary: one quoted entry per line, bytes as \\xNN where needed."""
    def quote(b):
        return "".join(chr(c) if 0x20 <= c < 0x7F and c not in (0x22, 0x5C) else f"\\x{c:02x}" for c in b)
    lines = [f'"{quote(e if isinstance(e, bytes) else e.encode())}"' for e in dict.fromkeys(entries)]
    (HERE / "dict").mkdir(exist_ok=True)
    (HERE / "dict" / f"{name}.dict").write_text("\n".join(lines) + "\n")


# --- checkpoints ------------------------------------------------------------------------------

def read_safetensors(data):
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def build_safetensors(tensors):
    """tensors: [(name, dtype, shape, bytes)] -> one safetensors file."""
    header, blobs, offset = {}, [], 0
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def checkpoint_seeds(make_model, models_20b_config):
    with tempfile.TemporaryDirectory() as tmp:
        for dense in ("bf16", "f16", "q8_0"):
            subprocess.run([make_model, "--preset", "micro", "--seed", "1", "--gguf-dense", dense,
                            "--format", "both" if dense == "bf16" else "gguf",
                            "--out", f"{tmp}/{dense}"], check=True, capture_output=True)
        hf = pathlib.Path(tmp) / "bf16" / "model-hf"
        st = (hf / "model.safetensors").read_bytes()
        config = (hf / "config.json").read_bytes()
        header, data = read_safetensors(st)
        tensors = [(k, v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
                   for k, v in header.items() if k != "__metadata__"]
        half = len(tensors) // 2
        shards = [build_safetensors(tensors[:half]), build_safetensors(tensors[half:])]
        names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
        index = json.dumps({"metadata": {"total_size": sum(len(t[3]) for t in tensors)},
                            "weight_map": {t[0]: names[i >= half] for i, t in enumerate(tensors)}},
                           indent=2).encode()
        st_seeds = {
            "micro": st + FILE_SEPARATOR + config,
            "micro-sharded": FILE_SEPARATOR.join([shards[0], config, index, shards[1]]),
        }
        if models_20b_config.is_file():  # the real config.json, with the micro weights
            st_seeds["micro-with-20b-config"] = st + FILE_SEPARATOR + models_20b_config.read_bytes()
        gguf_seeds = {f"micro-{d}": (pathlib.Path(tmp) / d / "model.gguf").read_bytes()
                      for d in ("bf16", "f16", "q8_0")}
        names_in_header = sorted(k for k in header if k != "__metadata__")
    return st_seeds, gguf_seeds, names_in_header, json.loads(config)


# --- tokenizer ---------------------------------------------------------------------------------

def tokenizer_json_seeds(tokenizer):
    full = json.loads(pathlib.Path(tokenizer).read_text())
    vocab = list(full["model"]["vocab"].items())
    seeds = {}
    for n in (3, 40):
        cut = json.loads(json.dumps(full["model"]))
        cut["vocab"] = dict(vocab[:n])
        cut["merges"] = full["model"].get("merges", [])[:n]
        doc = dict(full, model=cut, added_tokens=full["added_tokens"][:n])
        seeds[f"trimmed-{n}"] = json.dumps(doc, ensure_ascii=False, indent=1).encode()
    return seeds, full


def codec_seeds(shared):
    seeds, seen = {}, set()
    with open(shared / "conformance/tokenizer/cases.jsonl", encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            key = (case["category"], case["mode"])
            text = case["text"].encode()
            if key in seen or len(text) > 2048:
                continue
            seen.add(key)
            flags = b"\x01" if case["mode"] == "special" else b"\x00"
            seeds[f"{case['category']}-{case['mode']}"] = flags + text
    seeds["invalid-utf8"] = b"\x00abc\xff\xfe\xc3(\xe2\x82 \xf0\x9f\x98 end\xed\xa0\x80"
    seeds["specials-as-text"] = b"\x00<|start|>user<|message|>hi<|end|><|reserved_200100|><|"
    return seeds


# --- Harmony -----------------------------------------------------------------------------------

JSON_TOKENS = ["{", "}", "[", "]", ",", ":", '"', "null", "true", "false", "0", "-1", "1e400",
               "18446744073709551616", '"\\u0000"', '"\\ud800"']
JSON_SCHEMA_KEYWORDS = [
    "type", "object", "array", "string", "integer", "number", "boolean", "properties", "required",
    "additionalProperties", "items", "minItems", "maxItems", "enum", "const", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "anyOf", "oneOf", "allOf", "$ref", "#", "#/$defs/",
    "#/definitions/", "$defs", "definitions", "title", "description", "default", "examples",
    "$schema", "$id", "$comment", "pattern", "format", "minLength", "maxLength", "not",
    "contains", "uniqueItems", "prefixItems", "additionalItems", "patternProperties",
    "propertyNames", "minProperties", "maxProperties", "multipleOf", "if", "then", "else",
    "dependentRequired", "unevaluatedProperties", "$dynamicRef", "nullable", "1e308", "-1e308",
    "0.1", "9007199254740993", "10000"]
SERVER_REQUEST_KEYS = [
    "model", "input", "instructions", "messages", "prompt", "role", "content", "type", "text",
    "input_text", "output_text", "reasoning_text", "refusal", "message", "reasoning", "summary",
    "function_call", "function_call_output", "call_id", "name", "arguments", "output", "id",
    "phase", "commentary", "tools", "function", "parameters", "strict", "tool_choice", "auto",
    "none", "required", "parallel_tool_calls", "effort", "low", "medium", "high", "text",
    "format", "json_schema", "json_object", "schema", "response_format", "temperature", "top_p",
    "seed", "presence_penalty", "frequency_penalty", "max_output_tokens", "max_tokens",
    "max_completion_tokens", "max_reasoning_tokens", "stop", "stream", "stream_options",
    "include_usage", "logprobs", "top_logprobs", "include", "message.output_text.logprobs", "n",
    "best_of", "echo", "suffix", "store", "previous_response_id", "metadata", "truncation",
    "user", "system", "developer", "user", "assistant", "tool", "tool_calls", "tool_call_id",
    "reasoning_content", "web_search_preview", "image_url", "input_image"]

ROLES = {None: 0, "system": 1, "developer": 2, "user": 3, "assistant": 4, "tool": 5}


def harmony_seeds(shared):
    cases = json.loads((shared / "conformance/harmony/cases.json").read_text())["cases"]
    parser, render = {}, {}
    for c in cases:
        inp = c["input"]
        if "tokens" in inp and c["kind"] in ("parse_tokens", "streaming_parse"):
            config = ROLES.get(inp.get("role"), 0)
            parser[c["name"]] = bytes([config]) + b"".join(struct.pack("<I", t)[:3] for t in inp["tokens"])
        if "messages" in inp:
            render[c["name"]] = json.dumps({"messages": inp["messages"]}, ensure_ascii=False).encode()
        elif "message" in inp:
            render[c["name"]] = json.dumps([inp["message"]], ensure_ascii=False).encode()
    # Out-of-vocabulary ids (4-byte mode) inside content, split UTF-8 and a missing <|end|>.
    ids = [200006, 173781, 200008, 0xFFFFFFF0, 200006, 0x10000000, 200007]
    parser["oov-ids-4byte"] = bytes([4 | 8]) + b"".join(struct.pack("<I", t) for t in ids)
    return parser, render


def token_id(vocab, text):
    """Id of `text` as a single token of the byte-level vocabulary, or None."""
    table = byte_level_table()
    return vocab.get("".join(table[b] for b in text.encode()))


def byte_level_table():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


# --- constrained decoding and the server ------------------------------------------------------

ROOT = HERE.parents[1]
RAW_STRING = re.compile(r'R"([^(]*)\((.*?)\)\1"', re.S)


def raw_strings(path):
    """The C++ raw string literals of a file, in order."""
    return [m.group(2) for m in RAW_STRING.finditer((ROOT / path).read_text())]


def json_or_none(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


def nested_schemas(value):
    """Values of "parameters" and "schema" keys anywhere in a parsed document."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("parameters", "schema") and isinstance(v, (dict, bool)):
                yield v
            yield from nested_schemas(v)
    elif isinstance(value, list):
        for v in value:
            yield from nested_schemas(v)


def docs_request_bodies():
    """The bodies of the curl examples (-d '...') of docs/server.md."""
    return re.findall(r"-d '(.*?)'", (ROOT / "docs/server.md").read_text(), re.S)


def json_schema_seeds():
    schemas = []
    for path in ("tests/constrain/json_schema_test.cpp", "tests/constrain/mask_soundness_test.cpp"):
        schemas += [v for v in map(json_or_none, raw_strings(path)) if isinstance(v, (dict, bool))]
    for path in ("tests/constrain/harmony_grammar_test.cpp", "tests/server/parse_test.cpp",
                 "tests/server/format_test.cpp"):
        for doc in map(json_or_none, raw_strings(path)):
            schemas += list(nested_schemas(doc))
    for body in map(json_or_none, docs_request_bodies()):
        schemas += list(nested_schemas(body))
    texts = dict.fromkeys(json.dumps(s, ensure_ascii=False) for s in schemas)
    # After the NUL: 3-byte choices of the harness's walk (the k-th allowed token).
    walk = b"\0" + bytes(range(1, 25))
    return {f"{i:03d}": t.encode() + walk for i, t in enumerate(texts)}


def server_request_seeds():
    bodies = raw_strings("tests/server/parse_test.cpp") + docs_request_bodies()
    return {f"{i:03d}": b.encode() for i, b in enumerate(dict.fromkeys(bodies))}


# --- main ----------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--make-model", help="gptoss-make-model (the checkpoint seeds need it)")
    ap.add_argument("--only", help="comma-separated corpus names: json_schema, server_request")
    ap.add_argument("--shared", default=str(HERE.parents[1] / "../shared"))
    ap.add_argument("--tokenizer-json", default=str(HERE.parents[1] / "third_party/tokenizer/tokenizer.json"))
    ap.add_argument("--config-20b", default="/work/models/20b/model-hf/config.json")
    a = ap.parse_args()
    shared = pathlib.Path(a.shared)
    only = set(a.only.split(",")) if a.only else {"json_schema", "server_request", "all"}
    if "json_schema" in only:
        write_seeds("json_schema", json_schema_seeds())
        write_dict("json_schema", JSON_TOKENS + JSON_SCHEMA_KEYWORDS)
    if "server_request" in only:
        write_seeds("server_request", server_request_seeds())
        write_dict("server_request", JSON_TOKENS + SERVER_REQUEST_KEYS)
    if "all" not in only:
        return
    if not a.make_model:
        ap.error("--make-model is needed for the checkpoint seeds (or --only)")

    st_seeds, gguf_seeds, tensor_names, config = checkpoint_seeds(a.make_model, pathlib.Path(a.config_20b))
    write_seeds("safetensors", st_seeds)
    write_seeds("gguf", gguf_seeds)
    tok_seeds, full_tokenizer = tokenizer_json_seeds(a.tokenizer_json)
    write_seeds("tokenizer_json", tok_seeds)
    write_seeds("tokenizer_codec", codec_seeds(shared))
    parser, render = harmony_seeds(shared)
    write_seeds("harmony_parser", parser)
    write_seeds("harmony_render", render)

    json_tokens = JSON_TOKENS
    write_dict("safetensors", json_tokens + [FILE_SEPARATOR, "__metadata__", "dtype", "shape",
               "data_offsets", "weight_map", "BF16", "F16", "F32", "U8", "I64", "F8_E4M3",
               "model.safetensors", "model-00001-of-00002.safetensors", "_blocks", "_scales",
               "layer_types", "sliding_attention", "full_attention", "rope_scaling", "yarn",
               "quantization_config", "mxfp4"] + list(config.keys()) + tensor_names)
    write_dict("gguf", [b"GGUF", struct.pack("<I", 3), struct.pack("<I", 2), "general.architecture",
               "gpt-oss", "general.alignment", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
               "tokenizer.ggml.merges", "gpt-oss.block_count", "gpt-oss.embedding_length",
               "gpt-oss.attention.head_count", "gpt-oss.attention.head_count_kv",
               "gpt-oss.attention.key_length", "gpt-oss.attention.value_length",
               "gpt-oss.expert_count", "gpt-oss.expert_used_count",
               "gpt-oss.expert_feed_forward_length", "gpt-oss.context_length",
               "gpt-oss.attention.sliding_window", "gpt-oss.rope.scaling.type", "yarn",
               "token_embd.weight", "output.weight", "blk.0.ffn_gate_exps.weight",
               "blk.0.ffn_up_exps.weight", "blk.0.ffn_down_exps.weight"]
              + [struct.pack("<I", t) for t in (0, 1, 8, 9, 30, 39)])
    write_dict("tokenizer_json", json_tokens + ["model", "vocab", "merges", "type", "BPE",
               "added_tokens", "id", "content", "special", "pre_tokenizer", "Split", "Sequence",
               "pretokenizers", "pattern", "Regex", "String", "ByteLevel", "\\S", "[\\s]"])
    specials = [t["content"] for t in full_tokenizer["added_tokens"][:24]]
    write_dict("tokenizer_codec", specials + ["<|", "|>", "<|reserved_200100|>", "<|reserved_201087|>",
               b"\xf0\x9f", b"\xe2\x82", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", "\r\n", "'s", "'ll"])
    vocab = full_tokenizer["model"]["vocab"]
    words = ["assistant", "user", "system", "developer", "tool", " to", "=", "functions", ".",
             "analysis", "final", "commentary", " json", " code", "<", "|", " ", "\n", "browser",
             "python", "Hello"]
    ids = [200002, 200003, 200005, 200006, 200007, 200008, 200012, 201088, 199998, 199999]
    ids += [i for i in (token_id(vocab, w) for w in words) if i is not None]
    write_dict("harmony_parser", [struct.pack("<I", i)[:3] for i in ids])
    write_dict("harmony_render", json_tokens + ["messages", "role", "name", "recipient", "channel",
               "content_type", "content", "type", "text", "system_content", "developer_content",
               "model_identity", "reasoning_effort", "low", "medium", "high",
               "conversation_start_date", "knowledge_cutoff", "channel_config", "valid_channels",
               "channel_required", "tools", "instructions", "response_formats", "schema",
               "description", "parameters", "builtin", "functions", "oneOf", "properties",
               "required", "items", "enum", "nullable", "default", "title", "examples", "object",
               "array", "string", "integer", "number", "boolean", "system", "developer", "user",
               "assistant", "tool", "all", "<|constrain|>json", "to=", "<|end|>"])


if __name__ == "__main__":
    main()
