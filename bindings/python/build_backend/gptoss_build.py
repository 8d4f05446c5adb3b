"""PEP 517 build backend of the gptoss Python package (docs/python.md).

It builds libgptoss and its backend plugins with CMake and ships them inside the wheel, so an
installed `gptoss` needs no environment variable and no build tree. It uses the Python standard
library only: `pip install ./bindings/python` works offline with any python3 >= 3.8, with or
without build isolation, as there is nothing to download (no setuptools, no wheel).

Settings, as `pip ... --config-settings KEY=VALUE` or in the environment:
  native=bundle|system   GPTOSS_PYTHON_NATIVE     bundle (default): build libgptoss and ship it;
                                                  system: a pure-Python wheel that loads the
                                                  system's libgptoss.so.N (ctypes only)
  build-dir=PATH         GPTOSS_PYTHON_BUILD_DIR  the CMake build folder (default build/native
                                                  here, reused by the next build)
  jobs=N                 GPTOSS_PYTHON_BUILD_JOBS parallel compile jobs (default: every core)
  cmake-args="..."       GPTOSS_PYTHON_CMAKE_ARGS more CMake arguments, space-separated (e.g.
                                                  "-DGPTOSS_BUILD_CUDA=OFF -DGPTOSS_HIP=OFF": a
                                                  wheel without the GPU plugins, built faster)
"""

import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from pathlib import Path

NAME = "gptoss"
HERE = Path(__file__).resolve().parent.parent  # bindings/python, or an sdist's root
# The C++ sources an sdist carries for the native build: paths of the checkout.
NATIVE_SOURCES = ["CMakeLists.txt", "LICENSE", "cmake", "include", "libgptoss", "backends",
                  "tools", "abi", "bindings/CMakeLists.txt", "bindings/python/CMakeLists.txt"]


class UnsupportedOperation(Exception):
    """PEP 517: the backend cannot do this (here: an sdist of an sdist without its sources)."""


# ---------------------------------------------------------------------------------------------
# Where things are


def _native_source():
    """The checkout (bindings/python is two levels below it) or an sdist's native/ copy."""
    for root in (HERE / "native", HERE.parents[1]):
        if (root / "include" / "gptoss.h").is_file():
            return root
    raise RuntimeError(f"no libgptoss sources beside {HERE} (the checkout, or native/ in an sdist)")


def _version():
    """include/gptoss/version.h: the one version of libgptoss and of this package."""
    text = (_native_source() / "include" / "gptoss" / "version.h").read_text()
    match = re.search(r'#define GPTOSS_VERSION_STRING "([0-9][0-9.]*)"', text)
    if not match:
        raise RuntimeError("no GPTOSS_VERSION_STRING in include/gptoss/version.h")
    return match.group(1)


def _setting(config_settings, key, env, default):
    value = (config_settings or {}).get(key) or os.environ.get(env) or default
    return value


def _bundles_native(config_settings):
    mode = _setting(config_settings, "native", "GPTOSS_PYTHON_NATIVE", "bundle")
    if mode not in ("bundle", "system"):
        raise ValueError(f"native={mode!r}: expected 'bundle' or 'system'")
    return mode == "bundle"


# ---------------------------------------------------------------------------------------------
# Metadata


def _metadata(version):
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {version}\n"
        "Summary: Python bindings of libgptoss (gpt-oss inference) through ctypes\n"
        "License: Apache-2.0\n"
        "Requires-Python: >=3.8\n"
        "Classifier: Programming Language :: Python :: 3\n"
        "Classifier: Operating System :: POSIX :: Linux\n"
        "Description-Content-Type: text/markdown\n"
        f"\n{readme}"
    )


def _wheel_tag(bundle):
    """A bundled libgptoss ties the wheel to the platform, not to a Python version (ctypes)."""
    if not bundle:
        return "py3-none-any"
    return "py3-none-" + re.sub(r"[-.]", "_", sysconfig.get_platform())


def _dist_info(version):
    return f"{NAME}-{version}.dist-info"


# ---------------------------------------------------------------------------------------------
# The native build


def _run(args, **kwargs):
    print("gptoss build:", " ".join(str(a) for a in args), file=sys.stderr, flush=True)
    subprocess.run([str(a) for a in args], check=True, stdout=sys.stderr, **kwargs)


def _build_native(config_settings, stage):
    """Builds the runtime (libgptoss, plugins) and installs it into `stage`; returns
    {path in the package: file}."""
    cmake = shutil.which("cmake")
    if cmake is None:
        raise RuntimeError("cmake not found: it builds libgptoss (Debian: apt install cmake), "
                           "or build a pure wheel with --config-settings native=system")
    build_dir = Path(_setting(config_settings, "build-dir", "GPTOSS_PYTHON_BUILD_DIR",
                              HERE / "build" / "native"))
    jobs = _setting(config_settings, "jobs", "GPTOSS_PYTHON_BUILD_JOBS", str(os.cpu_count() or 2))
    extra = _setting(config_settings, "cmake-args", "GPTOSS_PYTHON_CMAKE_ARGS", "").split()
    _run([cmake, "-S", _native_source(), "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
          "-DCMAKE_INSTALL_LIBDIR=lib", "-DGPTOSS_BUILD_TESTS=OFF", "-DGPTOSS_BUILD_EXAMPLES=OFF",
          *extra])
    _run([cmake, "--build", build_dir, "--target", "gptoss-runtime", "--parallel", jobs])
    _run([cmake, "--install", build_dir, "--prefix", stage, "--component", "runtime", "--strip"])

    lib = Path(stage) / "lib"
    sonames = [p for p in lib.glob("libgptoss.so.*") if re.fullmatch(r"libgptoss\.so\.\d+", p.name)]
    if len(sonames) != 1:
        raise RuntimeError(f"expected one libgptoss.so.N in {lib}, found {sonames}")
    # A wheel holds no symbolic links: the library goes in under its SONAME only.
    files = {f"{NAME}/_native/{sonames[0].name}": sonames[0].resolve()}
    for plugin in sorted((lib / "gptoss" / "backends").glob("libgptoss-backend-*.so")):
        files[f"{NAME}/_native/gptoss/backends/{plugin.name}"] = plugin
    return files, f"_native/{sonames[0].name}"


# ---------------------------------------------------------------------------------------------
# PEP 517 hooks


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = Path(metadata_directory) / _dist_info(_version())
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata(_version()), encoding="utf-8")
    return info.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    bundle = _bundles_native(config_settings)
    tag = _wheel_tag(bundle)
    files = {f"{NAME}/{p.name}": p for p in sorted((HERE / NAME).glob("*.py"))}
    library = None
    with tempfile.TemporaryDirectory() as stage:
        if bundle:
            native, library = _build_native(config_settings, stage)
            files.update(native)
        build_info = ("# Written into the wheel by bindings/python/build_backend.\n"
                      f"VERSION = {version!r}\n"
                      f"LIBRARY = {library!r}  # relative to the package; None: the system's\n")
        info = _dist_info(version)
        generated = {
            f"{NAME}/_build_info.py": build_info.encode(),
            f"{info}/METADATA": _metadata(version).encode("utf-8"),
            f"{info}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: gptoss_build\n"
                              f"Root-Is-Purelib: {'false' if bundle else 'true'}\nTag: {tag}\n"
                              ).encode(),
            f"{info}/top_level.txt": f"{NAME}\n".encode(),
        }
        filename = f"{NAME}-{version}-{tag}.whl"
        _write_wheel(Path(wheel_directory) / filename, files, generated, f"{info}/RECORD")
    return filename


def _write_wheel(path, files, generated, record_name):
    """The zip of PEP 427: every entry with its hash in RECORD, RECORD last."""
    record = io.StringIO()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        entries = [(name, Path(src).read_bytes(), Path(src).stat().st_mode)
                   for name, src in files.items()]
        entries += [(name, data, 0o644) for name, data in generated.items()]
        for name, data, mode in entries:
            entry = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            entry.external_attr = (mode & 0o777 | 0o100000) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(entry, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.write(f"{name},sha256={digest},{len(data)}\n")
        record.write(f"{record_name},,\n")
        wheel.writestr(zipfile.ZipInfo(record_name, date_time=(2020, 1, 1, 0, 0, 0)),
                       record.getvalue())


def build_sdist(sdist_directory, config_settings=None):
    """The package and, under native/, the C++ sources its wheel is built from."""
    version = _version()
    source = _native_source()
    if source == HERE / "native":
        raise UnsupportedOperation("build the sdist from the checkout, not from an sdist")
    base = f"{NAME}-{version}"
    filename = f"{base}.tar.gz"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "dist", "*.egg-info")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / base
        shutil.copytree(HERE, root, ignore=skip)
        for rel in NATIVE_SOURCES:
            src, dst = source / rel, root / "native" / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, ignore=skip)
            else:
                shutil.copy2(src, dst)
        (root / "PKG-INFO").write_text(_metadata(version), encoding="utf-8")
        with tarfile.open(Path(sdist_directory) / filename, "w:gz") as tar:
            tar.add(root, arcname=base)
    return filename
