"""The twin's device image: what a design's ``.fpg`` carries in place of a bitstream.

A board's ``.fpg`` is the design's header followed by its gzipped device image. For the
twin the image is a tar of the design's HDL (every source and ``top.v``, in compile order)
and a manifest, so ``?progdev`` of the ``.fpg`` alone is enough to start the twin of that
design, on any machine with the project: the sources are unpacked into the simulation
cache and compiled (cached by their hash, as every model is).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

from casperfpga_ext.fpg import FpgHeader, parse_fpg_header

from . import cache as twin_cache
from .build import TwinBuildError, check_name, check_source_name, design_name, design_sources

FORMAT = "casper400g-twin"
VERSION = 1
MANIFEST = "twin.json"


class ImageError(ValueError):
    """Not a twin image, or a damaged one."""


@dataclass(frozen=True)
class TwinImage:
    design: str
    sources: tuple[Path, ...]  # unpacked, top.v last


def pack(design: str, sources: list[Path]) -> bytes:
    """The image (an uncompressed tar; the ``.fpg`` gzips it) of ``sources``."""
    names = [f"{k:03d}_{p.name}" for k, p in enumerate(sources)]
    manifest = {"format": FORMAT, "version": VERSION, "design": design, "sources": names}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))

        add(MANIFEST, json.dumps(manifest, indent=1).encode())
        for name, path in zip(names, sources, strict=True):
            add(name, path.read_bytes())
    return buf.getvalue()


def write_fpg(build_dir: Path, out: Path | None = None) -> Path:
    """``<design>_twin.fpg`` in ``build_dir``: the build's header + the gzipped twin image."""
    header = (build_dir / "fpg_header.txt").read_bytes()
    design = design_name(build_dir)
    image = pack(design, design_sources(build_dir))
    out = out or build_dir / f"{design}_twin.fpg"
    # mtime 0: the same design gives the same file.
    out.write_bytes(header + gzip.compress(image, mtime=0))
    return out


def is_image(data: bytes) -> bool:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            return tar.getmember(MANIFEST).isfile()
    except (tarfile.TarError, KeyError):
        return False


def unpack(data: bytes, cache_dir: Path | None = None) -> TwinImage:
    """Unpack an image into the cache (``twin_images/<hash>/``); its sources in order."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:")  # noqa: SIM115 - closed below
    except tarfile.TarError as exc:
        raise ImageError(f"not a twin image: {exc}") from None
    with tar:
        try:
            raw = tar.extractfile(MANIFEST)
            manifest = json.loads(raw.read()) if raw else None
        except (KeyError, ValueError) as exc:
            raise ImageError(f"not a twin image: no manifest ({exc})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ImageError("not a twin image: the manifest names another format")
        if manifest.get("version") != VERSION:
            raise ImageError(f"twin image version {manifest.get('version')!r}, want {VERSION}")
        names = manifest.get("sources")
        design = manifest.get("design")
        if not isinstance(names, list) or not names or not isinstance(design, str):
            raise ImageError("twin image manifest lacks its design or sources")
        try:
            check_name("design", design)
        except TwinBuildError as exc:
            raise ImageError(f"twin image: {exc}") from None
        digest = hashlib.sha256(data).hexdigest()[:16]
        out = (cache_dir or twin_cache.SIM_CACHE) / "twin_images" / digest
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for name in names:
            try:
                check_source_name(name)
            except (TwinBuildError, TypeError):
                raise ImageError(f"twin image: bad source name {name!r}") from None
            member = tar.extractfile(name)
            if member is None:
                raise ImageError(f"twin image: {name} is missing")
            path = out / name
            content = member.read()
            if not path.is_file() or path.read_bytes() != content:
                path.write_bytes(content)
            paths.append(path)
    return TwinImage(design, tuple(paths))


def read_fpg(data: bytes, source: str = "<fpg>") -> tuple[FpgHeader, bytes]:
    """An ``.fpg``'s header and its (gunzipped) device image."""
    header = parse_fpg_header(data, source)
    try:
        return header, gzip.decompress(data[header.bitstream_offset :])
    except (OSError, EOFError) as exc:
        raise ImageError(f"{source}: the image is not gzip data ({exc})") from None
