"""``HotswapImage``: build the controller image from this repository and push it.

The tag is a hash of the files that go into the image, so the same sources always give the
same tag (and the same plan), and any change to the controller rolls out a new image.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pulumi
import pulumi_docker_build as docker_build
import pulumi_gcp as gcp

from tpu_platform.config import ImageBuildConfig

IMAGE_NAME = "hotswap"


def controller_dir() -> Path:
    """The installed ``tpu_platform.hotswap`` package folder: the Dockerfile and what it copies.

    Found through the import system, so it is the same files in this repository (editable install)
    and in an installed wheel, whose package data carries the Dockerfile and its requirements.
    """
    root = resources.files("tpu_platform.hotswap")
    if not isinstance(root, Path) or not (root / "Dockerfile").is_file():
        raise RuntimeError(
            f"tpu_platform.hotswap at {root} has no Dockerfile: install tpu-platform from a wheel or "
            "a checkout (not a zip), or set tpu-platform:hotswap.image to a built image"
        )
    return root


def build_context() -> Path:
    """The folder holding the ``tpu_platform`` package: the Dockerfile's ``COPY`` paths start there.

    Its ``Dockerfile.dockerignore`` (read by BuildKit) keeps everything else out of the context.
    """
    return controller_dir().parents[1]


def source_digest(root: Path | None = None) -> str:
    """A stable hash of the controller's sources (paths and bytes, caches ignored)."""
    root = root or controller_dir()
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class HotswapImageArgs:
    """Where to push: the stack's project and region, and the build settings."""

    project: str
    region: str
    build: ImageBuildConfig


class HotswapImage(pulumi.ComponentResource):
    """An Artifact Registry repository and the controller image pushed to it.

    Paths are relative to the working directory, which Pulumi sets to the project folder, so
    state and plans do not depend on where the repository is checked out.
    """

    ref: pulumi.Output[str]

    def __init__(self, name: str, args: HotswapImageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-platform:hotswap:Image", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        repository = gcp.artifactregistry.Repository(
            f"{name}-repository",
            project=args.project,
            location=args.region,
            repository_id=args.build.repository,
            format="DOCKER",
            description="Images built by tpu-platform stacks",
            opts=child,
        )
        registry = f"{args.region}-docker.pkg.dev"
        tag = pulumi.Output.concat(
            registry,
            "/",
            args.project,
            "/",
            repository.repository_id,
            f"/{IMAGE_NAME}:{source_digest()}",
        )
        token = gcp.organizations.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))
        image = docker_build.Image(
            f"{name}-image",
            context=docker_build.BuildContextArgs(location=os.path.relpath(build_context())),
            dockerfile=docker_build.DockerfileArgs(location=os.path.relpath(controller_dir() / "Dockerfile")),
            platforms=[docker_build.Platform(args.build.platform)],
            tags=[tag],
            push=True,
            build_on_preview=False,
            registries=[
                docker_build.RegistryArgs(
                    address=registry,
                    username="oauth2accesstoken",
                    password=pulumi.Output.secret(token.access_token),
                )
            ],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[repository]),
        )
        self.ref = image.ref
        self.register_outputs({"ref": self.ref})
