"""End-to-end tests of `gptoss-bench` on the shared conformance model: the JSON object has the
fields the issue asks for with sane values, the markdown table has its rows, and bad arguments
exit with status 2 and a message (never a crash).

Environment (set by CTest): GPTOSS_BENCH (the executable), GPTOSS_TEST_MODEL (HF directory),
GPTOSS_TEST_TOKENIZER (tokenizer.json)."""

import json
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = os.environ.get("GPTOSS_BENCH", str(REPO / "build/bin/gptoss-bench"))
MODEL = os.environ.get("GPTOSS_TEST_MODEL", str(REPO.parent / "shared/conformance/logits/model-hf"))
TOKENIZER = os.environ.get("GPTOSS_TEST_TOKENIZER", str(REPO / "third_party/tokenizer/tokenizer.json"))
SMALL = ["-m", MODEL, "--tokenizer-json", TOKENIZER, "-p", "8", "-n", "4", "-r", "2", "-t", "2"]


def run(*args):
    return subprocess.run([BENCH, *args], capture_output=True, text=True, timeout=300)


class BenchTest(unittest.TestCase):
    def test_json_has_the_fields_with_sane_values(self):
        for precision in ("fast", "exact"):
            r = run(*SMALL, "--output", "json", "--precision", precision)
            self.assertEqual(r.returncode, 0, r.stderr)
            out = json.loads(r.stdout)
            for key in ("model", "threads", "n_prompt", "n_gen", "prefill_tok_s", "decode_tok_s",
                        "load_s", "peak_rss_bytes", "bandwidth_gbs"):
                self.assertIn(key, out)
            self.assertEqual(out["precision"], precision)
            self.assertEqual(out["kv"], "f32")
            self.assertEqual((out["threads"], out["n_prompt"], out["n_gen"]), (2, 8, 4))
            for key in ("prefill_tok_s", "decode_tok_s"):
                self.assertGreater(out[key]["mean"], 0)
                self.assertGreaterEqual(out[key]["std"], 0)
            self.assertGreater(out["peak_rss_bytes"], 1 << 20)
            self.assertGreater(out["bandwidth_gbs"], 0.1)
            self.assertGreater(out["bandwidth_pct"]["mean"], 0)
            self.assertGreaterEqual(out["bandwidth_pct"]["std"], 0)
            self.assertGreater(out["load_s"], 0)

    def test_bf16_kv_reads_half_the_kv_bytes(self):
        # -p 200: the KV is a visible share of the tiny model's bytes per decode token.
        args = ["-m", MODEL, "--tokenizer-json", TOKENIZER, "-p", "200", "-n", "2", "-r", "1", "-t", "2",
                "--output", "json"]
        f32, bf16 = (json.loads(run(*args, *kv).stdout) for kv in ([], ["--kv", "bf16"]))
        self.assertEqual((f32["kv"], bf16["kv"]), ("f32", "bf16"))
        self.assertGreater(bf16["decode_tok_s"]["mean"], 0)
        self.assertLess(bf16["decode_bytes_per_token"], f32["decode_bytes_per_token"])

    def test_batched_decode_row(self):
        r = run(*SMALL, "-b", "3", "--output", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["batch"], 3)
        self.assertGreater(out["batched_decode_tok_s"], 0)
        self.assertGreater(out["batched_ms_per_step"], 0)
        r = run(*SMALL, "-b", "2")
        self.assertIn("| tg4 x 2 sequences |", r.stdout)

    def test_backend_and_peak_bandwidth(self):
        # --peak-gbps: decode against a device's bandwidth, no host read test; --backend names
        # the backend the model loads on (an unknown one is an error that names it).
        r = run(*SMALL, "--backend", "cpu", "--peak-gbps", "1000", "--output", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual((out["backend"], out["bandwidth_gbs"]), ("cpu", 1000))
        pct = out["bandwidth_pct"]["mean"]
        self.assertAlmostEqual(pct, 100 * out["achieved_gbs"] / 1000, delta=0.05 * pct + 1e-6)
        r = run(*SMALL, "--backend", "cpu", "--peak-gbps", "1000")
        self.assertIn("% of peak BW", r.stdout)
        r = run(*SMALL, "--backend", "nosuch")
        self.assertEqual(r.returncode, 1)
        self.assertIn("unknown backend 'nosuch'", r.stderr)

    def test_markdown_table(self):
        r = run(*SMALL, "--mmap", "0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("| pp8 |", r.stdout)
        self.assertIn("| tg4 |", r.stdout)
        self.assertIn("read bandwidth", r.stdout)

    def test_read_probe(self):
        # Decode against pure loads of its bytes over a 1 GiB buffer and over the model's files.
        r = run("--read-probe", "-m", MODEL, "--tokenizer-json", TOKENIZER, "-n", "4", "-t", "2",
                "--output", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual((out["threads"], out["n_gen"]), (2, 4))
        self.assertGreater(out["bytes_per_token"], 1 << 20)
        for key in ("decode_gbs", "buffer_gbs", "model_files_gbs", "token_replay_gbs"):
            self.assertGreater(out[key], 0.1, key)
        # The replay's tensors are the bytes the library counts for a decode token, less the
        # one embedding row it does not replay.
        self.assertLess(abs(out["token_replay_bytes"] - out["bytes_per_token"]),
                        0.01 * out["bytes_per_token"])
        r = run("--read-probe", "-m", MODEL, "--tokenizer-json", TOKENIZER, "-n", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("| the model's files, on and on through them |", r.stdout)
        self.assertIn("| a token's own tensors in the checkpoint's files, random experts |",
                      r.stdout)
        # A GGUF checkpoint: the replay reads the same tensors from the file (its experts are
        # converted at load), as many bytes as the library counts for a token, less the
        # embedding row.
        gguf = str(Path(MODEL).parent / "model.gguf")
        r = run("--read-probe", "-m", gguf, "--tokenizer-json", TOKENIZER, "-n", "2",
                "--output", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertGreater(out["token_replay_gbs"], 0.1)
        self.assertLess(abs(out["token_replay_bytes"] - out["bytes_per_token"]),
                        0.01 * out["bytes_per_token"])
        r = run("--read-probe", "-m", "/nonexistent", "-n", "2")
        self.assertEqual(r.returncode, 1)
        self.assertIn("nonexistent", r.stderr)

    def test_constrained_mask_timing(self):
        r = run("--constrained", "-m", MODEL, "--tokenizer-json", TOKENIZER, "-n", "12", "-t", "2",
                "--output", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertGreater(out["decode_ms_per_token"], 0)
        grammars = {s["grammar"] for s in out["scenarios"]}
        self.assertEqual(len(grammars), 6)  # three grammars, with and without a token budget
        for s in out["scenarios"]:
            self.assertGreater(s["count"], 0)
            m = s["mask_ms"]
            self.assertTrue(0 < m["p50"] <= m["p99"] <= m["max"], s)
            self.assertGreater(s["compile_ms"], 0)
        self.assertEqual(sum(s["count"] for s in out["scenarios"]), 6 * 12)
        table = run("--constrained", "-m", MODEL, "--tokenizer-json", TOKENIZER, "-n", "4", "-t", "2")
        self.assertEqual(table.returncode, 0, table.stderr)
        self.assertIn("| grammar | steps |", table.stdout)

    def test_read_bandwidth_alone(self):
        r = run("--read-bw", "-t", "2", "--output", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(json.loads(r.stdout)["read_bandwidth_gbs"], 0.1)
        r = run("--read-bw", "-t", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^read bandwidth [0-9.]+ GB/s$")

    def test_side_by_side_script(self):
        # examples/bench/vs_llama_cpp.sh with stand-ins for llama.cpp's two tools (their JSON
        # output as llama.cpp d32676d writes it) and gptoss-bench on the conformance GGUF: the
        # table's rows, the ratios of each round's pair, decode against the read test.
        script = REPO / "examples/bench/vs_llama_cpp.sh"
        gguf = str(Path(MODEL).parent / "model.gguf")
        with tempfile.TemporaryDirectory() as tmp:
            fake = Path(tmp) / "llama/bin"
            fake.mkdir(parents=True)
            (fake / "llama-bench").write_text(
                "#!/bin/sh\necho 'llama_model_load: ...' >&2\n"
                "echo '[{\"n_prompt\": 512, \"n_gen\": 0, \"avg_ts\": 2.5}, "
                "{\"n_prompt\": 0, \"n_gen\": 64, \"avg_ts\": 0.5}]'\n")
            (fake / "llama-batched-bench").write_text(
                "#!/bin/sh\necho 'main: n_kv_max = 1024'\n"
                "echo '{\"n_kv_max\": 1024, \"pp\": 16, \"tg\": 32, \"pl\": 8, \"speed_tg\": 0.3}'\n")
            for tool in fake.iterdir():
                tool.chmod(0o755)
            env = dict(os.environ, GPTOSS_BUILD=str(Path(BENCH).resolve().parents[1]), ROUNDS="2",
                       RAW=str(Path(tmp) / "raw"))
            r = subprocess.run(["bash", str(script), str(fake.parent), gguf], capture_output=True, text=True,
                               timeout=600, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:5]]
                    for line in r.stdout.splitlines() if line.startswith("| ") and "---" not in line}
            self.assertEqual(rows["prefill pp512 tok/s"][0], "2.50")
            self.assertEqual(rows["decode tg64 tok/s"][0], "0.50")
            for name in ("prefill pp512 tok/s", "decode tg64 tok/s"):
                gptoss = [float(v) for v in rows[name][1].split("–")]
                ratio = [float(v) for v in rows[name][2].rstrip("×").split("–")]
                llama = float(rows[name][0])
                self.assertAlmostEqual(min(gptoss) / llama, min(ratio), delta=0.01 * min(ratio) + 0.01)
            b8 = next(v for k, v in rows.items() if k.startswith("8 sequences"))
            self.assertEqual(b8[0], "0.30")
            self.assertGreater(float(b8[1].split("–")[0]), 0.3)
            pct = rows["decode as % of the read test beside it"]
            self.assertTrue(pct[0].endswith("%") and pct[1].endswith("%"), pct)
            # gptoss's decode against the read probe's pure loads (the faster memory), each round's
            # share worked out here from the probe's own JSON.
            probe = next(v for k, v in rows.items() if k.startswith("decode as % of pure loads"))
            want = []
            for n in (1, 2):
                p = json.loads((Path(tmp) / f"raw/r{n}-gptoss-probe.json").read_text())
                want.append(round(100 * p["decode_gbs"] / max(p["buffer_gbs"], p["model_files_gbs"])))
            got = [int(v) for v in probe[1].rstrip(" %").split("–")]
            self.assertEqual((min(got), max(got)), (min(want), max(want)), probe)
            self.assertTrue((Path(tmp) / "raw/table.md").is_file())
            # Missing tools, a missing model: exit 1 with a message.
            r = subprocess.run(["bash", str(script), tmp, gguf], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 1)
            self.assertIn("llama-bench", r.stderr)
            r = subprocess.run(["bash", str(script), str(fake.parent), "/nonexistent.gguf"], capture_output=True,
                               text=True, env=env)
            self.assertEqual(r.returncode, 1)
            self.assertIn("nonexistent", r.stderr)

    def test_q8_0_precision_script_arguments(self):
        # examples/bench/q8_0_precision.sh needs llama.cpp's sources and build (CI has neither):
        # its usage, and a clear exit 1 naming what is missing.
        script = str(REPO / "examples/bench/q8_0_precision.sh")
        r = subprocess.run(["bash", script], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("LLAMA_SOURCE_DIR LLAMA_BUILD_DIR", r.stdout)
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run(["bash", script, tmp, tmp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("llama.h", r.stderr)
            (Path(tmp) / "include").mkdir()
            (Path(tmp) / "include/llama.h").write_text("")
            r = subprocess.run(["bash", script, tmp, tmp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("llama-quantize", r.stderr)

    def test_speculative_and_prompt_lookup(self):
        """--speculative: the verify cost per k (with --logit-rows the plain forward beside it)
        and the oracle, which keeps every draft; --prompt-lookup: the restated file's drafts are
        mostly kept, in fewer steps than tokens, and the speculator's free generation is plain
        decoding's (docs/speculative.md)."""
        r = run("--speculative", *SMALL[:4], "-p", "16", "-n", "12", "-r", "2", "-t", "2",
                "--draft-max", "4", "--logit-rows", "--output", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [json.loads(line) for line in r.stdout.splitlines()]
        verify = [row for row in rows if row["bench"] == "verify"]
        self.assertEqual([row["k"] for row in verify], [1, 2, 4, 8, 16])
        for row in verify:
            self.assertGreater(row["step_ms"], 0)
            self.assertGreater(row["forward_ms"], 0)
        oracle = [row for row in rows if row["bench"] == "oracle"][0]
        self.assertEqual(oracle["acceptance"], 1.0)
        self.assertEqual(oracle["identical_runs"], 2)
        r = run("--prompt-lookup", *SMALL[:4], "-p", "16", "-n", "48", "-r", "1", "-t", "2",
                "--output", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = {row["bench"]: row for row in map(json.loads, r.stdout.splitlines())}
        restated = rows["lookup_restated_file"]
        self.assertEqual(restated["answer_tokens"], 48)
        self.assertGreater(restated["acceptance"], 0.3)
        self.assertLess(restated["steps"], 48)
        self.assertEqual(restated["steps"] + restated["accepted"], 48)  # a step: kept + 1
        unrelated = rows["lookup_unrelated_answer"]
        self.assertLess(unrelated["acceptance"], restated["acceptance"])
        self.assertEqual(unrelated["steps"] + unrelated["accepted"], unrelated["answer_tokens"])
        never = rows["never_right_drafter"]
        self.assertEqual(never["accepted"], 0)
        self.assertEqual(never["steps"], never["answer_tokens"])
        self.assertGreater(never["drafted"], 0)  # it probes, within the cost bound
        self.assertLess(never["drafted"], never["answer_tokens"] // 4)
        free = rows["lookup_free_generation"]
        self.assertEqual(free["identical_runs"], 1)
        self.assertEqual(free["steps"] + free["accepted"], 48)

    def test_bad_arguments(self):
        for args in (["-m"], ["-m", MODEL, "-p", "x"], ["-m", MODEL, "--precision", "half"],
                     ["-m", MODEL, "--mmap", "2"], ["-m", MODEL, "--output", "xml"], ["--bogus"],
                     ["-m", MODEL, "-r", "0"], ["-m", MODEL, "--kv", "f16"], ["-m", MODEL, "--kv"],
                     ["-m", MODEL, "-b", "0"], ["-m", MODEL, "-b", "65"],
                     ["-m", MODEL, "--peak-gbps", "0"], ["-m", MODEL, "--peak-gbps", "fast"],
                     ["-m", MODEL, "--backend"],
                     ["--read-probe"], ["--read-probe", "-m", MODEL, "-n", "0"],
                     ["--constrained"], ["--constrained", "-m", MODEL, "-n", "0"],
                     ["--prompt-lookup"], ["--prompt-lookup", "-m", MODEL, "--draft-max", "0"]):
            r = run(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertTrue(r.stderr.strip(), args)
        r = run("-m", "/nonexistent", "-p", "4", "-n", "1", "-r", "1")
        self.assertNotEqual(r.returncode, 0)
        self.assertLess(r.returncode, 128)  # an error, not a signal
        self.assertIn("nonexistent", r.stderr)


if __name__ == "__main__":
    unittest.main()
