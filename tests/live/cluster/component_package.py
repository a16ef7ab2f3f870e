"""The component package (``provider/``) as the engine runs it: its virtualenv and its plugin folder.

``provider/PulumiPlugin.yaml`` names ``runtime: python``, so the engine would start the Python
language host and ask it to run the plugin (``RunPlugin``). That host cannot be built here: its
module, ``github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3``, is never tagged,
and the module proxy refuses v3.274.0, ``@latest`` and pseudo-versions (403). The engine has a
second way to start a plugin from a folder, tried first: an executable named
``pulumi-resource-<package>`` in it, run directly (``ExecPlugin``, pulumi sdk v3.274.0
``go/common/resource/plugin/plugin.go``). The folder made here holds such an executable, and it
runs exactly what the host's ``RunPlugin`` runs for ``provider/`` (pulumi 3.260
``sdk/python/cmd/pulumi-language-python/main.go``): the virtualenv's ``python`` on the plugin folder
with the engine's arguments, in the engine's working directory, with the virtualenv activated
(``PATH`` and ``VIRTUAL_ENV``, ``PYTHONHOME`` unset: toolchain ``ActivateVirtualEnv``).

The virtualenv is what the host's ``pip`` toolchain makes of ``provider/requirements.txt``
(``InstallDependencies``: ``python -m venv``, pip, setuptools and wheel upgraded, then
``pip install -r requirements.txt`` in the plugin folder): this checkout itself and the lock's
versions, from PyPI. It is kept in the upstream cache, one per digest of what it installs.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from .binaries import BUILD, REPO

PROVIDER = REPO / "provider"
PACKAGE = "tpu-platform"
# What the virtualenv installs: the requirements, the lock they constrain to, and the package.
INSTALLED = ("pyproject.toml", "constraints.txt", "provider/requirements.txt")
SOURCES = ("tpu_platform", "components")
VENV_PREFIX = "provider-venv-"


def cache_root() -> Path:
    """The upstream binaries' cache (``upstream/build.py``), where the virtualenv is kept too."""
    out = subprocess.run(
        [sys.executable, "-c", f"import runpy; print(runpy.run_path({str(BUILD)!r})['cache_root']())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def install_digest() -> str:
    """A digest of every file the virtualenv's install reads from this checkout."""
    h = hashlib.sha256()
    files = [REPO / name for name in INSTALLED]
    for folder in SOURCES:
        files += sorted(p for p in (REPO / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        h.update(str(path.relative_to(REPO)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def provider_virtualenv() -> tuple[Path, bool]:
    """The virtualenv of ``provider/requirements.txt`` (made if missing) and whether it was made now."""
    digest = install_digest()
    target = cache_root() / f"{VENV_PREFIX}{digest}"
    if (target / "complete").is_file():
        return target, False
    for stale in cache_root().glob(f"{VENV_PREFIX}*"):  # one at a time: each is a whole install
        shutil.rmtree(stale, ignore_errors=True)
    # A virtualenv's scripts name its folder: it is made where it stays, then marked complete.
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    env = activated(dict(os.environ), target)
    pip = [str(target / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
    for args in (["--upgrade", "pip", "setuptools", "wheel"], ["-r", "requirements.txt"]):
        out = subprocess.run(
            [*pip, *args], cwd=PROVIDER, env=env, capture_output=True, text=True, check=False
        )
        if out.returncode != 0:
            raise RuntimeError(f"pip install {' '.join(args)} in {PROVIDER}: {out.stderr.strip()[-2000:]}")
    (target / "complete").write_text(digest + "\n")
    return target, True


def activated(env: dict[str, str], venv: Path) -> dict[str, str]:
    """``env`` with ``venv`` activated as the toolchain does it."""
    out = {k: v for k, v in env.items() if k not in ("PYTHONHOME", "VIRTUAL_ENV")}
    out["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    out["VIRTUAL_ENV"] = str(venv)
    return out


def plugin_folder(workdir: Path, venv: Path) -> Path:
    """A folder whose ``pulumi-resource-tpu-platform`` runs ``provider/`` as RunPlugin does."""
    folder = workdir / "tpu-platform-plugin"
    folder.mkdir(parents=True, exist_ok=True)
    launcher = folder / f"pulumi-resource-{PACKAGE}"
    python, plugin = shlex.quote(str(venv / "bin" / "python")), shlex.quote(str(PROVIDER))
    launcher.write_text(
        "#!/bin/sh\n"
        f"# provider/ as pulumi-language-python's RunPlugin runs it ({PROVIDER}/PulumiPlugin.yaml).\n"
        "unset PYTHONHOME\n"
        f"export VIRTUAL_ENV={shlex.quote(str(venv))}\n"
        f'export PATH={shlex.quote(str(venv / "bin"))}:"$PATH"\n'
        f'exec {python} {plugin} "$@"\n'
    )
    launcher.chmod(0o755)
    return folder
