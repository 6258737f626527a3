"""Model names, aliases and references, validated before anything touches MLflow or the disk.

A name ends up as a folder name in the download cache and inside MLflow filter strings, so it is held to a
strict pattern: no path separators, no ``..``, no quotes, no leading dot.  References::

    name            the latest complete version (same as name@latest)
    name@latest     the latest complete version (interrupted registrations are skipped)
    name@alias      the version an alias points at (e.g. name@production)
    name/3          version 3
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from nerservice.errors import InvalidModelRefError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ALIAS_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
LATEST = "latest"
REF_FORMS = "name, name@alias, name@latest or name/VERSION (name: letters, digits, '_', '-', '.'; max 64)"


def validate_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or ".." in name:
        raise InvalidModelRefError(
            f"invalid model name {name!r}", name=str(name),
            hint="use 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit, without '..'")
    return name


def validate_alias(alias: str) -> str:
    # MLflow itself reserves "latest" and "v<digits>" (they would shadow versions).
    if not isinstance(alias, str) or not ALIAS_RE.fullmatch(alias) or alias.lower() == LATEST \
            or re.fullmatch(r"[vV]\d+", alias):
        raise InvalidModelRefError(
            f"invalid alias {alias!r}", alias=str(alias),
            hint="use 1-64 letters, digits, '_' or '-', starting with a letter; 'latest' and 'v<N>' are reserved")
    return alias


def validate_version(version: int | str) -> int:
    try:
        v = int(version)
    except (TypeError, ValueError):
        v = 0
    if v < 1 or (isinstance(version, str) and not version.isdigit()):
        raise InvalidModelRefError(f"invalid model version {version!r}", version=str(version),
                                   hint="versions are positive integers")
    return v


@dataclass(frozen=True)
class ModelRef:
    name: str
    version: int | None = None  # set for name/N
    alias: str | None = None  # set for name@alias; None with version None means latest

    def __str__(self) -> str:
        if self.version is not None:
            return f"{self.name}/{self.version}"
        return f"{self.name}@{self.alias or LATEST}"


def parse_ref(ref: str) -> ModelRef:
    """``"ner"``, ``"ner@production"``, ``"ner@latest"``, ``"ner/3"`` → ModelRef; anything else is refused."""
    if not isinstance(ref, str) or not ref.strip():
        raise InvalidModelRefError(f"empty model reference {ref!r}", ref=str(ref), hint=f"use {REF_FORMS}")
    ref = ref.strip()
    try:
        if "@" in ref:
            name, alias = ref.split("@", 1)
            validate_name(name)
            if alias == LATEST:
                return ModelRef(name)
            return ModelRef(name, alias=validate_alias(alias))
        if "/" in ref:
            name, version = ref.split("/", 1)
            return ModelRef(validate_name(name), version=validate_version(version))
        return ModelRef(validate_name(ref))
    except InvalidModelRefError as exc:
        raise InvalidModelRefError(f"invalid model reference {ref!r}: {exc.message}", ref=ref,
                                   hint=f"use {REF_FORMS}") from None
