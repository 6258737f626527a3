"""One error hierarchy for the whole project.

Every error carries a stable ``code`` (documented in ERRORS below), a human message that names the bad
value and, where we know it, the fix, plus structured ``context`` so callers (the API, Spark quarantine
reports) can render it without parsing the message.  ``http_status`` lets the API map any error to a
status code in one place.
"""
from __future__ import annotations

from typing import Any


class NerServiceError(Exception):
    """Base class. Subclasses set ``code`` and ``http_status``."""

    code: str = "NER000"
    http_status: int = 500

    def __init__(self, message: str, *, hint: str | None = None, **context: Any) -> None:
        self.message = message
        self.hint = hint
        self.context = context
        text = f"[{self.code}] {message}"
        if hint:
            text += f" ({hint})"
        super().__init__(text)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        if self.context:
            out["context"] = {k: v for k, v in self.context.items() if _jsonable(v)}
        return out


def _jsonable(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool, list, dict))


# --- configuration -----------------------------------------------------------------------------------
class ConfigError(NerServiceError):
    code, http_status = "NER100", 400


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


# --- corpora -----------------------------------------------------------------------------------------
class CorpusError(NerServiceError):
    code, http_status = "NER200", 400


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
    code, http_status = "NER300", 400


# --- models ------------------------------------------------------------------------------------------
class ModelError(NerServiceError):
    code, http_status = "NER400", 500


class ModelLoadError(ModelError):
    code = "NER401"


# --- model store -------------------------------------------------------------------------------------
class StoreError(NerServiceError):
    code, http_status = "NER500", 500


class ModelNotFoundError(StoreError):
    code, http_status = "NER501", 404


class IntegrityError(StoreError):
    """A stored artifact does not match its recorded checksum (tampered or truncated)."""

    code, http_status = "NER502", 500


class InvalidModelRefError(StoreError):
    code, http_status = "NER503", 400


class PromotionRefusedError(StoreError):
    code, http_status = "NER504", 409


# --- serving -----------------------------------------------------------------------------------------
class RequestError(NerServiceError):
    code, http_status = "NER600", 400


class PayloadTooLargeError(RequestError):
    code, http_status = "NER601", 413


class UnauthorizedError(RequestError):
    code, http_status = "NER602", 401


class OverloadedError(NerServiceError):
    code, http_status = "NER700", 429


class NotReadyError(NerServiceError):
    code, http_status = "NER701", 503


# --- distributed training ----------------------------------------------------------------------------
class DistributedError(NerServiceError):
    code, http_status = "NER800", 500


ERRORS: dict[str, type[NerServiceError]] = {
    cls.code: cls
    for cls in [
        NerServiceError, ConfigError, CorporaConfigError, MissingSplitError, DuplicateCorpusError,
        EmptyLabelSetError, LabelMapError, CorpusError, CorpusFormatError, CorpusEncodingError, EmptyCorpusError,
        DocumentFormatError, AnnotationError,
        EmbeddingsError, ModelError, ModelLoadError, StoreError, ModelNotFoundError, IntegrityError,
        InvalidModelRefError, PromotionRefusedError, RequestError, PayloadTooLargeError, UnauthorizedError,
        OverloadedError, NotReadyError, DistributedError,
    ]
}
