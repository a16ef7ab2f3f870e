"""The pinned upstream CRDs, downloaded once into a user cache and verified by sha256.

Users of the package have no ``shared/crds`` folder. The files the schema check needs are the
CRDs at the upstream tags the platform installs, byte for byte; their sha256 are pinned here
(the same bytes as the repository's ``shared/crds``). A file whose hash differs is never used.

    python -m tpu_platform.schema.fetch            # fetch into ~/.cache/tpu-platform/crds
    python -m tpu_platform.schema.fetch --dest DIR
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

KUEUE_BASE = "https://raw.githubusercontent.com/kubernetes-sigs/kueue/v0.19.2/config/components/crd/bases/"
JOBSET_BASE = "https://raw.githubusercontent.com/kubernetes-sigs/jobset/v0.12.0/config/components/crd/bases/"
ENV_OFFLINE = "TPU_PLATFORM_OFFLINE"
_TIMEOUT_S = 30
_MAX_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class PinnedCrd:
    """One CRD file: where it lives in the cache, its upstream URL and its sha256."""

    path: str
    url: str
    sha256: str


def _kueue(name: str, sha256: str) -> PinnedCrd:
    return PinnedCrd(
        f"kueue-v0.19.2/kueue.x-k8s.io_{name}.yaml", f"{KUEUE_BASE}kueue.x-k8s.io_{name}.yaml", sha256
    )


PINNED: tuple[PinnedCrd, ...] = (
    _kueue("admissionchecks", "2bf4003c0a3ea3d6ceab940c7a271ad211372dab59d2739acfa8b2bdb0724acb"),
    _kueue("clusterqueues", "e0a5fc9b370c70f3d993d4f599865817338ecf94187b30b15b12ff33c579bd55"),
    _kueue("cohorts", "61fbe5ec55d45e7fae2d65321fb32517b197257ab78ad55316673183aac911c2"),
    _kueue("localqueues", "dd10ef8d3578e7212fa52763549e7b6be0949793a5b924495fcd293330109fed"),
    _kueue("multikueueclusters", "842e579d281f77c711e7edd66e242b24457e1c2e7a36b5840d923ea60c33d589"),
    _kueue("multikueueconfigs", "4aa94664f85de11834490d5b4add63d91b2076a89e8acc97fa07b16ee81f9ae4"),
    _kueue("provisioningrequestconfigs", "0399b2689d7468c64a1ef4e3c8bf9603c261a152f822b6698903b23f69e790dc"),
    _kueue("resourceflavors", "19e339c47e9ca3fa2c9eeddd27715a512f765c4794ed859733408a9715720173"),
    _kueue("topologies", "f703575d3bb64d26f6e839f831e01646367ed41a89b3abf163f8e842ca1c4d2b"),
    _kueue("workloadpriorityclasses", "0b755726aab05b8def9a53ee15b201eed3846bcffd1ff5528fed123f4ae03519"),
    _kueue("workloads", "1970ff6fcc5dc1a29e3f290ed736032c5d4509c94efe2c642d64a244ad1b8aa5"),
    PinnedCrd(
        "jobset-v0.12.0/jobset.x-k8s.io_jobsets.yaml",
        f"{JOBSET_BASE}jobset.x-k8s.io_jobsets.yaml",
        "d022b87624512cf0b6741b31b24a2bea9945b5a838b50713af29332c878bb6fe",
    ),
)


class FetchError(RuntimeError):
    """A pinned CRD could not be fetched or did not match its pin; the message says which and why."""


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/tpu-platform/crds`` (``~/.cache/tpu-platform/crds`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tpu-platform" / "crds"


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verified(root: Path, pins: Sequence[PinnedCrd] = PINNED) -> bool:
    """Every pinned file is under ``root`` with its pinned hash."""
    return all((root / pin.path).is_file() and sha256_file(root / pin.path) == pin.sha256 for pin in pins)


def _download(url: str) -> bytes:
    if not url.startswith(("https://", "http://127.0.0.1", "http://localhost")):
        raise FetchError(f"{url}: only https (or a loopback test server) is used")
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response:
            data: bytes = response.read(_MAX_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise FetchError(f"{url}: {getattr(err, 'reason', err)}") from err
    if len(data) > _MAX_BYTES:
        raise FetchError(f"{url}: larger than {_MAX_BYTES} bytes; not a CRD file")
    return data


def fetch(dest: Path | None = None, pins: Sequence[PinnedCrd] = PINNED, base_url: str | None = None) -> Path:
    """Download every pinned CRD missing or wrong under ``dest``; verify each before it is kept.

    ``base_url`` replaces each pin's URL up to its file name (a mirror, or a test server).
    """
    root = dest or cache_dir()
    for pin in pins:
        target = root / pin.path
        if target.is_file() and sha256_file(target) == pin.sha256:
            continue
        url = f"{base_url.rstrip('/')}/{pin.path}" if base_url else pin.url
        data = _download(url)
        digest = hashlib.sha256(data).hexdigest()
        if digest != pin.sha256:
            raise FetchError(f"{url}: sha256 {digest} is not the pinned {pin.sha256}; file not used")
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
            tmp.write(data)
        Path(tmp.name).replace(target)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpu_platform.schema.fetch", description=__doc__)
    parser.add_argument(
        "--dest", type=Path, default=None, help="folder to fetch into (default: the user cache)"
    )
    args = parser.parse_args(argv)
    try:
        root = fetch(args.dest)
    except FetchError as err:
        print(f"fetch: {err}", file=sys.stderr)
        return 2
    print(f"{len(PINNED)} pinned CRD files verified in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
