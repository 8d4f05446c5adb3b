"""Where the Python tests find the package, the library, the model and the C reference.

Environment (set by CTest; defaults fit a checkout with shared/ beside it):
  GPTOSS_LIBRARY_PATH   directory of libgptoss.so (default: <repo>/build/lib)
  GPTOSS_TEST_MODEL     HF model directory (default: the shared conformance model)
  GPTOSS_TEST_TOKENIZER tokenizer.json (default: <repo>/third_party/tokenizer/tokenizer.json)
  GPTOSS_C_REFERENCE    the gptoss-python-c-reference executable (tests using it skip without)
"""

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bindings" / "python"))
os.environ.setdefault("GPTOSS_LIBRARY_PATH", str(REPO / "build" / "lib"))

import gptoss  # noqa: E402

SHARED = Path(os.environ.get("GPTOSS_TEST_SHARED_DIR", REPO.parent / "shared"))
MODEL = os.environ.get("GPTOSS_TEST_MODEL", str(SHARED / "conformance/logits/model-hf"))
TOKENIZER = os.environ.get("GPTOSS_TEST_TOKENIZER",
                           str(REPO / "third_party/tokenizer/tokenizer.json"))
C_REFERENCE = os.environ.get("GPTOSS_C_REFERENCE", "")

_model = None


def model():
    """One model for the whole test run (loading is the slow part)."""
    global _model
    if _model is None:
        _model = gptoss.Model(MODEL, tokenizer_path=TOKENIZER)
    return _model


# A Harmony prompt of a few tokens, written as text so no test hard-codes ids.
PROMPT_TEXT = "<|start|>user<|message|>What is 2 + 2?<|end|><|start|>assistant"
