"""One error hierarchy for the whole project.

Every error carries a stable ``code`` (documented in ERRORS below), a human message that names the bad
value and, where we know it, the fix, plus structured ``context`` so callers (the API, Spark quarantine
reports) can render it without parsing the message.  HTTP statuses are the API's business: api/errors.py
maps codes to them (and defines the few errors only the service raises).
"""
from __future__ import annotations

from typing import Any


class NerServiceError(Exception):
    """Base class. Subclasses set ``code``."""

    code: str = "NER000"

    def __init__(self, message: str, *, hint: str | None = None, **context: Any) -> None:
        self.message = message
        self.hint = hint
        self.context = context
        text = f"[{self.code}] {message}"
        if hint:
            text += f" ({hint})"
        super().__init__(text)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled with its attributes (a worker process's error re-raised in its parent,
        # ``training/run_pool.py``): the default calls ``cls(*args)``, which subclasses with their own
        # ``__init__`` (keyword-only fields) cannot take, and would drop the hint and context.
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        if self.context:
            out["context"] = {k: v for k, v in self.context.items() if _jsonable(v)}
        return out


def _rebuild(cls: type[NerServiceError], args: tuple[Any, ...], state: dict[str, Any]) -> NerServiceError:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


def _jsonable(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool, list, dict))


# --- configuration -----------------------------------------------------------------------------------
class ConfigError(NerServiceError):
    code = "NER100"


class CorporaConfigError(ConfigError):
    """A multi-corpus config (``nerservice train --corpora``) that cannot train: found before training."""

    code = "NER110"


class MissingSplitError(CorporaConfigError):
    code = "NER111"


class DuplicateCorpusError(CorporaConfigError):
    code = "NER112"


class EmptyLabelSetError(CorporaConfigError):
    code = "NER113"


class LabelMapError(CorporaConfigError):
    """Two labels of one corpus mapped onto one name, or a map naming a label the corpus does not have."""

    code = "NER114"


class CheckpointMismatchError(ConfigError):
    """A rerun into an output folder whose checkpoint another run wrote (other data or model config)."""

    code = "NER120"


# --- corpora -----------------------------------------------------------------------------------------
class CorpusError(NerServiceError):
    code = "NER200"


class CorpusFormatError(CorpusError):
    """A malformed line. Context: file, line (1-based), text, expected."""

    code = "NER201"

    def __init__(self, *, file: str, line: int, text: str, expected: str, reason: str | None = None) -> None:
        shown = text if len(text) <= 120 else text[:117] + "..."
        msg = f"{file}:{line}: {reason + ': ' if reason else ''}got {shown!r}, expected {expected}"
        super().__init__(msg, file=file, line=line, text=shown, expected=expected, reason=reason)
        self.file, self.line, self.text, self.expected, self.reason = file, line, shown, expected, reason


class CorpusEncodingError(CorpusError):
    code = "NER202"


class EmptyCorpusError(CorpusError):
    code = "NER203"


class CorpusTooLargeError(CorpusError):
    """Input over one of its bounds (e.g. unlabelled text for distillation: tokens in all, tokens in one
    sentence). Context: file, line where known, the bound and the setting that raises it."""

    code = "NER204"


class DocumentFormatError(CorpusError):
    """A malformed document file (PubTator, BioC, BRAT). Context: file, line (0 when the format has no
    lines to point at), document (its id, when known), reason."""

    code = "NER210"

    def __init__(self, reason: str, *, file: str, line: int = 0, document: str | None = None,
                 hint: str | None = None) -> None:
        where = f"{file}:{line}" if line else file
        doc = f" document {document!r}:" if document is not None else ""
        super().__init__(f"{where}:{doc} {reason}", hint=hint, file=file, line=line, document=document,
                         reason=reason)
        self.file, self.line, self.document, self.reason = file, line, document, reason


class AnnotationError(CorpusError):
    """An annotation that cannot become IOB2 tags as it stands (strict mode). Context: file, document,
    annotation id, start, end, text, kind (``text-mismatch``, ``token-boundary``, ``overlap``,
    ``discontinuous``, ``outside-passage``, ``empty-span``)."""

    code = "NER211"

    def __init__(self, kind: str, detail: str, *, file: str, document: str, annotation: str, start: int,
                 end: int, text: str) -> None:
        super().__init__(
            f"{file}: document {document!r}: annotation {annotation} [{start}, {end}) {text!r}: {kind}: {detail}",
            hint="fix the annotation, or read with --lenient to apply the documented policy and get a report",
            file=file, document=document, annotation=annotation, start=start, end=end, text=text, kind=kind)
        self.kind = kind


# --- embeddings --------------------------------------------------------------------------------------
class EmbeddingsError(NerServiceError):
    code = "NER300"


# --- models ------------------------------------------------------------------------------------------
class ModelError(NerServiceError):
    code = "NER400"


class ModelLoadError(ModelError):
    code = "NER401"


# --- model store -------------------------------------------------------------------------------------
class StoreError(NerServiceError):
    code = "NER500"


class ModelNotFoundError(StoreError):
    code = "NER501"


class IntegrityError(StoreError):
    """A stored artifact does not match its recorded checksum (tampered or truncated)."""

    code = "NER502"


class InvalidModelRefError(StoreError):
    code = "NER503"


class PromotionRefusedError(StoreError):
    code = "NER504"


# --- requests (the API adds its own subclasses, NER601.. and NER7xx, in api/errors.py) ------------------
class RequestError(NerServiceError):
    code = "NER600"


# --- distributed training ----------------------------------------------------------------------------
class DistributedError(NerServiceError):
    code = "NER800"


ERRORS: dict[str, type[NerServiceError]] = {
    cls.code: cls
    for cls in list[type[NerServiceError]]([
        NerServiceError, ConfigError, CorporaConfigError, MissingSplitError, DuplicateCorpusError,
        EmptyLabelSetError, LabelMapError, CheckpointMismatchError, CorpusError, CorpusFormatError,
        CorpusEncodingError, EmptyCorpusError, CorpusTooLargeError, DocumentFormatError, AnnotationError,
        EmbeddingsError, ModelError, ModelLoadError, StoreError, ModelNotFoundError, IntegrityError,
        InvalidModelRefError, PromotionRefusedError, RequestError, DistributedError,
    ])
}
