"""Print the project's requirements from pyproject.toml, one per line, for a Docker dependency layer.

Why: images install the dependencies in a layer of their own (rebuilt only when pyproject.toml changes) and
the project itself with ``pip install --no-deps .`` afterwards, so editing code does not reinstall TensorFlow.
The GPU image also needs the base list *without* ``tensorflow-cpu`` (it installs ``tensorflow[and-cuda]``
instead; both wheels own the same ``tensorflow/`` package folder and must not be installed together).

``--replace OLD=NEW`` swaps a distribution for another with the same version range and no marker (the GPU
image: ``tensorflow-cpu=tensorflow[and-cuda]``). ``--complement OLD=NEW`` keeps OLD and adds NEW with the
same range under the negated marker: ``tensorflow-cpu`` only has x86-64 wheels, so an image built on an arm64
laptop gets ``tensorflow`` instead, and the version range still lives only in pyproject.toml.

Usage: python requirements.py [--pyproject FILE] [--extras spark,store] [--no-base] [--exclude NAME]
       [--replace OLD=NEW] [--complement OLD=NEW]
Standard library only (runs before anything is installed).
"""
from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[([^\]]*)\])?")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _split(line: str) -> tuple[str, str, str]:
    """``name[extras]>=1,<2; marker`` → (canonical name, version range, marker)."""
    req, _, marker = line.partition(";")
    m = _NAME.match(req)
    if not m:
        raise SystemExit(f"requirements.py: cannot parse requirement {line!r}")
    return _canonical(m.group(1)), req[m.end():].strip(), marker.strip()


_FLIP = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">", "in": "not in", "not in": "in"}
_CMP = re.compile(r"^\s*(\w+)\s*(==|!=|<=|>=|<|>|not in|in)\s*(['\"][^'\"]*['\"])\s*$")


def _negate(marker: str) -> str:
    """PEP 508 has no ``not``: negate ``a == 'x' or b == 'y'`` (one kind of joiner, no parentheses) by De
    Morgan. Anything more complex is refused rather than guessed."""
    if "(" in marker or (" and " in marker and " or " in marker):
        raise SystemExit(f"requirements.py: cannot negate marker {marker!r} (use simple and/or chains)")
    joiner, flipped = (" or ", " and ") if " or " in marker else (" and ", " or ")
    parts = []
    for term in marker.split(joiner):
        m = _CMP.match(term)
        if not m:
            raise SystemExit(f"requirements.py: cannot negate marker term {term!r}")
        parts.append(f"{m.group(1)} {_FLIP[m.group(2)]} {m.group(3)}")
    return flipped.join(parts)


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        old, sep, new = item.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise SystemExit(f"requirements.py: {flag} wants OLD=NEW, got {item!r}")
        out[_canonical(old.strip())] = new.strip()
    return out


def requirements(project: dict, extras: list[str], *, exclude: list[str] = (), replace: list[str] = (),
                 complement: list[str] = (), base: bool = True) -> list[str]:
    """Base dependencies plus the named extras; self-references like ``nerservice[a,b]`` are expanded.

    Raises SystemExit with a message naming the extra when an extra does not exist (a typo in a Dockerfile
    must fail the build, not silently install less)."""
    own = _canonical(project["name"])
    optional: dict[str, list[str]] = project.get("optional-dependencies", {})
    excluded = {_canonical(e) for e in exclude}
    replacements = _pairs(list(replace), "--replace")
    complements = _pairs(list(complement), "--complement")
    out: list[str] = []
    seen_extras: set[str] = set()

    def add(lines: list[str]) -> None:
        for line in lines:
            m = _NAME.match(line)
            if not m:
                raise SystemExit(f"requirements.py: cannot parse requirement {line!r}")
            name = _canonical(m.group(1))
            if name == own:  # "nerservice[glove,store]" inside an extra
                for extra in (m.group(3) or "").split(","):
                    if extra.strip():
                        add_extra(extra.strip())
                continue
            if name in excluded:
                continue
            _, spec, marker = _split(line)
            if name in replacements:
                line = f"{replacements[name]}{spec}"
            emitted = [line]
            if name in complements:
                if not marker:
                    raise SystemExit(f"requirements.py: --complement {m.group(1)}: it has no marker to negate")
                emitted.append(f"{complements[name]}{spec}; {_negate(marker)}")
            out.extend(x for x in emitted if x not in out)

    def add_extra(extra: str) -> None:
        if extra in seen_extras:
            return
        if extra not in optional:
            raise SystemExit(f"requirements.py: no extra {extra!r} in pyproject.toml (known: {sorted(optional)})")
        seen_extras.add(extra)
        add(optional[extra])

    if base:
        add(project.get("dependencies", []))
    for extra in extras:
        add_extra(extra)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pyproject", default="pyproject.toml")
    p.add_argument("--extras", default="", help="comma-separated extras, e.g. spark,store")
    p.add_argument("--exclude", action="append", default=[], help="distribution to leave out (repeatable)")
    p.add_argument("--no-base", action="store_true",
                   help="only the extras' requirements (the model-store server image needs mlflow alone)")
    p.add_argument("--replace", action="append", default=[], metavar="OLD=NEW",
                   help="install NEW with OLD's version range instead of OLD (repeatable)")
    p.add_argument("--complement", action="append", default=[], metavar="OLD=NEW",
                   help="also install NEW with OLD's range where OLD's marker is false (repeatable)")
    args = p.parse_args(argv)
    project = tomllib.loads(Path(args.pyproject).read_text(encoding="utf-8"))["project"]
    extras = [e.strip() for e in args.extras.split(",") if e.strip()]
    sys.stdout.write("".join(f"{line}\n" for line in requirements(
        project, extras, exclude=args.exclude, replace=args.replace, complement=args.complement,
        base=not args.no_base)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
