"""Request and response bodies (they also make the OpenAPI schema that clients and schemathesis read)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

MAX_MODEL_CHARS = 256  # longer than any reference we serve; bounds what a wrong name costs to check and echo


class ExtractRequest(BaseModel):
    """Send ``texts`` (a list) or ``text`` (one string), not both."""

    model_config = ConfigDict(extra="forbid")

    texts: list[StrictStr] | None = Field(None, description="Texts to tag; each may hold many sentences.")
    text: StrictStr | None = Field(None, description="A single text (same as texts=[text]).")
    model: StrictStr | None = Field(None, max_length=MAX_MODEL_CHARS,
                                    description="Optional: the model you expect (e.g. 'demo@production' "
                                    "or 'demo/3'); a request naming another model is refused with NER501.")


class EntityOut(BaseModel):
    start: int = Field(description="Offset of the first character, in Unicode code points of the text")
    end: int = Field(description="Offset after the last character (text[start:end] == entity text)")
    label: str
    text: str
    score: float = Field(description="Mean CRF marginal probability of the entity's tags (0-1)")


class TextResult(BaseModel):
    entities: list[EntityOut]


class ModelIdentity(BaseModel):
    name: str
    version: str


class Timing(BaseModel):
    queue_ms: float = Field(description="Waiting for a batch slot")
    inference_ms: float = Field(description="The model calls of the batches this request was part of")
    total_ms: float = Field(description="Handler time, from receiving the body to answering")
    batch_texts: int = Field(description="Texts in the (first) batch this request ran in")
    batches: int = Field(1, description="Micro-batches the request ran in: a large one is run in pieces "
                         "with other requests in between")


class ExtractResponse(BaseModel):
    model: ModelIdentity
    results: list[TextResult] = Field(description="One per input text, in order")
    timing: Timing


class PassageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    offset: StrictInt = Field(ge=0, description="Where the passage starts in the document (code points)")
    text: StrictStr
    type: StrictStr | None = Field(None, max_length=MAX_MODEL_CHARS, description="e.g. title, abstract")


class DocumentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: StrictStr = Field(min_length=1, max_length=MAX_MODEL_CHARS)
    passages: list[PassageIn] = Field(description="In order, not overlapping")


DocumentFormat = Literal["pubtator", "bioc-xml", "bioc-json", "jsonl"]


class DocumentsRequest(BaseModel):
    """Send ``documents`` or one file's ``content`` with its ``format`` (BRAT text: a passage at 0)."""

    model_config = ConfigDict(extra="forbid")

    documents: list[DocumentIn] | None = Field(None, description="Documents: id + passages with offsets")
    format: DocumentFormat | None = Field(None, description="The format of 'content'")
    content: StrictStr | None = Field(None, description="A PubTator, BioC XML, BioC JSON or JSON-lines file; "
                                      "its annotations, if any, are ignored")
    output: DocumentFormat | None = Field(None, description="Also answer the documents, with the entities as "
                                          "their annotations, in this format ('content' of the response)")
    model: StrictStr | None = Field(None, max_length=MAX_MODEL_CHARS, description="As in /v1/extract")


class DocumentEntityOut(EntityOut):
    passage: int = Field(description="Index of the passage the entity is in; start/end are document offsets")


class DocumentOut(BaseModel):
    id: str
    entities: list[DocumentEntityOut]


class DocumentsResponse(BaseModel):
    model: ModelIdentity
    documents: list[DocumentOut] = Field(description="One per input document, in order")
    content: str | None = Field(None, description="The documents in the requested 'output' format")
    timing: Timing


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable code, e.g. NER600 (see nerservice.errors)")
    message: str
    hint: str | None = None
    context: dict[str, Any] | None = None


class ErrorResponse(BaseModel):
    error: ErrorDetail


class ModelsResponse(BaseModel):
    state: str = Field(description="empty | loading | ready | failed")
    ref: str | None = Field(description="The configured reference (NERSERVICE_API_MODEL)")
    model: dict[str, Any] | None = Field(description="The loaded model: name, version, manifest, metrics...")
    error: ErrorDetail | None = None


class ReloadResponse(BaseModel):
    changed: bool = Field(description="False when the reference still points at the loaded version")
    previous: ModelIdentity | None
    current: ModelIdentity


class Status(BaseModel):
    status: str
    model: ModelIdentity | None = None


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for our error body."""
    return {s: {"model": ErrorResponse, "description": _REASONS.get(s, "Error")} for s in statuses}


_REASONS = {400: "Bad request (code NER600)", 401: "Missing or wrong admin token (NER602)",
            404: "Unknown model (NER501)", 408: "Body not sent in time (NER605)",
            413: "Over a size limit (NER601) or more model work than one request may cause (NER603)",
            415: "Content-Type is not application/json (NER604)",
            429: "Queue full: too many requests or too many tokens waiting (NER700)",
            503: "No model loaded yet (NER701)", 500: "Model failed to load"}
