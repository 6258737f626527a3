"""Files of a model folder: checksums, JSON, the manifest, and the staged write.

A folder is written under a temporary name beside its target and renamed into place (``staged``), so a
reader never sees half a model.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from nerservice.artifacts.layout import MANIFEST
from nerservice.errors import IntegrityError, ModelLoadError


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def manifest_fingerprint(path: Path) -> str:
    """sha256 of a model folder's manifest: its version when it is named by folder, not by the store."""
    try:
        return hashlib.sha256((path / MANIFEST).read_bytes()).hexdigest()
    except OSError as exc:
        raise ModelLoadError(f"{path}: cannot read {MANIFEST} ({exc.strerror})", path=str(path)) from None


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True), encoding="utf-8")


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{path}: cannot read ({exc})", path=str(path)) from None


@contextlib.contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A temporary folder beside ``out``, swapped into place when the block succeeds and removed when it
    fails: a reader never sees half a folder, and a process killed at any point leaves ``out`` whole (the
    old or the new one; ``exchange_into_place``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        yield tmp
        _fsync_tree(tmp)
        exchange_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def exchange_into_place(tmp: Path, out: Path) -> None:
    """Make the complete folder ``tmp`` be ``out``, with no moment at which ``out`` is missing.

    Where the filesystem can (Linux ``renameat2(RENAME_EXCHANGE)``: ext4, xfs, btrfs, tmpfs, overlayfs)
    the two names are exchanged in one atomic step and the old folder, now at ``tmp``, is removed.
    Elsewhere: ``out`` is renamed aside to ``.NAME.old-PID``, then ``tmp`` to ``out``; a kill between the two
    leaves the old folder aside, and ``recover_staged(out)`` (run by training at its next start) renames
    it back."""
    if out.exists() and _exchange(tmp, out):
        _crash_point("exchanged")
        shutil.rmtree(tmp, ignore_errors=True)
        return
    if out.exists():
        aside = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, aside)
        _crash_point("set-aside")
        os.replace(tmp, out)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.replace(tmp, out)


def _set_aside(out: Path) -> list[Path]:
    try:
        return [p for p in out.parent.glob(f".{out.name}.old-*") if p.is_dir()]
    except OSError:
        return []


def readable(out: Path) -> Path:
    """``out``, or while a two-rename swap was interrupted (``out`` missing), its complete set-aside copy:
    what a reader that must not wait for ``recover_staged`` (another rank resuming) should read."""
    if out.exists():
        return out
    aside = _set_aside(out)
    return max(aside, key=lambda p: p.stat().st_mtime) if aside else out


def recover_staged(out: Path) -> list[Path]:
    """After a crash: put a set-aside ``out`` back if ``out`` is missing, then remove the leftover staging
    and set-aside folders of ``out`` (``.NAME.*``). Call only where no other process writes ``out`` (a
    training run owns its run folder). Returns what was removed."""
    leftovers = sorted(p for p in out.parent.glob(f".{out.name}.*") if p.is_dir()) if out.parent.is_dir() else []
    if not out.exists() and _set_aside(out):
        # A complete folder: it was renamed aside only after it had been fully written.
        newest = readable(out)
        os.replace(newest, out)
        leftovers.remove(newest)
    for p in leftovers:
        shutil.rmtree(p, ignore_errors=True)
    return leftovers


# Tests set this to kill the process at a named point of the swap (tests/artifacts/test_staged_crash.py).
crash_hook: Callable[[str], None] | None = None


def _crash_point(name: str) -> None:
    if crash_hook is not None:
        crash_hook(name)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_renameat2: Any = None


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two existing paths; False where the platform or filesystem cannot."""
    global _renameat2
    if _renameat2 is None:
        _renameat2 = False
        if sys.platform.startswith("linux"):
            try:
                fn = ctypes.CDLL(None, use_errno=True).renameat2
                fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
                fn.restype = ctypes.c_int
                _renameat2 = fn
            except (AttributeError, OSError):  # glibc < 2.28, musl: no wrapper
                pass
    if not _renameat2:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False  # this filesystem does not exchange: the two-rename path
    raise OSError(err, os.strerror(err), str(b))


def _fsync_tree(folder: Path) -> None:
    """Flush the staged files and the folder itself, so the swap never publishes data still in flight."""
    for p in folder.iterdir():
        if p.is_file():
            with open(p, "rb") as fh:
                os.fsync(fh.fileno())
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_manifest(folder: Path, fmt: str, names: Sequence[str], **extra: Any) -> None:
    write_json(folder / MANIFEST, {
        "format": fmt, **extra,
        "files": {n: {"sha256": sha256_file(folder / n), "bytes": (folder / n).stat().st_size} for n in names},
    })


def read_manifest(folder: Path) -> Any:
    try:
        return json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise IntegrityError(f"{folder / MANIFEST}: unreadable manifest ({exc})", path=str(folder)) from None


def check_files(folder: Path, manifest: Any, *, required: Sequence[str]) -> dict[str, Any]:
    """The manifest's 'files' table is well formed, lists every ``required`` name, names only plain files in
    ``folder``, and each has its recorded size and sha256."""
    d = folder
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not all(
            isinstance(m, dict) and {"bytes", "sha256"} <= set(m) for m in files.values()):
        raise IntegrityError(f"{d / MANIFEST}: no valid 'files' table", path=str(d))
    # A manifest that stops listing a required file would otherwise let that file change unchecked.
    unlisted = [n for n in required if n not in files]
    if unlisted:
        raise IntegrityError(f"{d / MANIFEST}: does not list {', '.join(unlisted)}", path=str(d))
    for name, meta in files.items():
        p = d / name
        if Path(name).name != name:  # plain names only: a manifest must not point outside its folder
            raise IntegrityError(f"{d / MANIFEST}: bad file name {name!r}", path=str(d))
        if not p.is_file():
            raise IntegrityError(f"{p}: missing file listed in the manifest", path=str(p))
        if p.stat().st_size != meta["bytes"] or sha256_file(p) != meta["sha256"]:
            raise IntegrityError(f"{p}: checksum mismatch (file tampered with or truncated)", path=str(p))
    return dict(manifest)
