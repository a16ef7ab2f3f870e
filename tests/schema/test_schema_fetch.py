"""The pinned CRDs: fetched once into a user cache over HTTP, verified by sha256, never trusted unverified.

Only a loopback server (127.0.0.1) is used; the pins are the sha256 of ../shared/crds, which is
byte-identical to kubernetes-sigs/kueue v0.19.2 and kubernetes-sigs/jobset v0.12.0
(config/components/crd/bases/).
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tpu_platform.schema import CrdsUnavailable
from tpu_platform.schema import crds as crds_module
from tpu_platform.schema.crds import DEFAULT_CRDS_DIR, locate_crds
from tpu_platform.schema.fetch import PINNED, FetchError, PinnedCrd, cache_dir, fetch, verified

needs_shared = pytest.mark.skipif(not DEFAULT_CRDS_DIR.is_dir(), reason="../shared/crds unavailable")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """An HTTP server on 127.0.0.1 serving a folder; yields (base URL, folder, requested paths)."""
    root = tmp_path / "served"
    root.mkdir()
    requested: list[str] = []

    class Recording(_Quiet):
        def do_GET(self) -> None:
            requested.append(self.path)
            super().do_GET()

    handler = functools.partial(Recording, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root, requested
    finally:
        httpd.shutdown()
        httpd.server_close()


@needs_shared
def test_pins_are_the_hashes_of_the_shared_files() -> None:
    for pin in PINNED:
        data = (DEFAULT_CRDS_DIR / pin.path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == pin.sha256, pin.path
    assert all(pin.url.startswith("https://raw.githubusercontent.com/kubernetes-sigs/") for pin in PINNED)
    assert {pin.url.split("/")[5] for pin in PINNED} == {"v0.19.2", "v0.12.0"}


@needs_shared
def test_fetch_downloads_verifies_and_then_reuses(
    server: tuple[str, Path, list[str]], tmp_path: Path
) -> None:
    base, served, requested = server
    shutil.copytree(DEFAULT_CRDS_DIR / "kueue-v0.19.2", served / "kueue-v0.19.2")
    shutil.copytree(DEFAULT_CRDS_DIR / "jobset-v0.12.0", served / "jobset-v0.12.0")
    dest = tmp_path / "cache"
    assert fetch(dest, base_url=base) == dest
    assert verified(dest) and len(requested) == len(PINNED)
    fetch(dest, base_url=base)
    assert len(requested) == len(PINNED), "verified files are not fetched again"
    # A corrupted cache file is fetched again, and only that one.
    broken = dest / PINNED[0].path
    broken.write_bytes(b"tampered")
    fetch(dest, base_url=base)
    assert len(requested) == len(PINNED) + 1 and verified(dest)


def test_a_file_that_does_not_match_its_pin_is_never_kept(
    server: tuple[str, Path, list[str]], tmp_path: Path
) -> None:
    base, served, _ = server
    (served / "x").mkdir()
    (served / "x" / "crd.yaml").write_bytes(b"kind: CustomResourceDefinition\n")
    pin = PinnedCrd("x/crd.yaml", "https://example.invalid/crd.yaml", "0" * 64)
    with pytest.raises(FetchError, match="not the pinned"):
        fetch(tmp_path / "cache", pins=[pin], base_url=base)
    assert not (tmp_path / "cache" / "x" / "crd.yaml").exists()


def test_an_unreachable_server_is_a_clear_error(server: tuple[str, Path, list[str]], tmp_path: Path) -> None:
    base, _, _ = server
    pin = PinnedCrd("missing/crd.yaml", "https://example.invalid/crd.yaml", "0" * 64)
    with pytest.raises(FetchError, match=r"missing/crd\.yaml"):
        fetch(tmp_path / "cache", pins=[pin], base_url=base)


def test_locate_never_falls_back_silently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TPU_PLATFORM_CRDS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(crds_module, "DEFAULT_CRDS_DIR", tmp_path / "no-shared")
    assert cache_dir() == tmp_path / "xdg" / "tpu-platform" / "crds"
    with pytest.raises(CrdsUnavailable, match="forbids downloading"):
        locate_crds(allow_fetch=False)
    with pytest.raises(CrdsUnavailable, match="no such folder"):
        locate_crds(tmp_path / "nothing")
    monkeypatch.setenv("TPU_PLATFORM_CRDS", str(tmp_path / "nothing"))
    with pytest.raises(CrdsUnavailable, match="TPU_PLATFORM_CRDS"):
        locate_crds()


@needs_shared
def test_locate_uses_a_verified_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TPU_PLATFORM_CRDS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(crds_module, "DEFAULT_CRDS_DIR", tmp_path / "no-shared")
    cache = cache_dir()
    for pin in PINNED:
        (cache / pin.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DEFAULT_CRDS_DIR / pin.path, cache / pin.path)
    assert locate_crds(allow_fetch=False) == cache
    (cache / PINNED[-1].path).write_text("changed")
    with pytest.raises(CrdsUnavailable):
        locate_crds(allow_fetch=False)
