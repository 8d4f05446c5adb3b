"""setuptools hook: records the checkout the package is installed from, so that an installed
copy still finds the library in that checkout's build tree (build/lib/libgptoss.so).
Everything else is declared in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyRecordingCheckout(build_py):
    def run(self):
        super().run()
        checkout = Path(__file__).resolve().parents[2]
        target = Path(self.build_lib) / "gptoss" / "_checkout.py"
        target.write_text(f"# Written at install time by setup.py.\nCHECKOUT = {str(checkout)!r}\n")


setup(cmdclass={"build_py": BuildPyRecordingCheckout})
