"""Runs the fault scenarios (scripts/faults.sh sets the environment): each its own server(s),
its own directory under GPTOSS_TEST_TMP, a line per check it passed, and a failure stops it."""
import argparse
import importlib
import os
import sys
import time
import traceback

SCENARIOS = ["crash", "signals", "clients", "postgres", "disk", "memory"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--long", action="store_true", help="the longer version of every scenario")
    p.add_argument("names", nargs="*", help=f"scenarios to run (default all: {' '.join(SCENARIOS)})")
    a = p.parse_args()
    names = a.names or SCENARIOS
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    failed = []
    for name in names:
        if name not in SCENARIOS:
            sys.exit(f"unknown scenario '{name}' ({' '.join(SCENARIOS)})")
        module = importlib.import_module(name)
        print(f"== fault: {name}: {module.__doc__.splitlines()[0]}", flush=True)
        start = time.monotonic()
        try:
            module.run(os.environ.get("GPTOSS_TEST_TMP", "/tmp"), a.long)
            print(f"   ok ({time.monotonic() - start:.1f} s)", flush=True)
        except Exception:  # noqa: BLE001 - every scenario reports
            traceback.print_exc()
            failed.append(name)
            print(f"   FAILED ({time.monotonic() - start:.1f} s)", flush=True)
        finally:
            sys.modules["common"].kill_leftovers()
    if failed:
        sys.exit(f"failed: {' '.join(failed)}")


if __name__ == "__main__":
    main()
