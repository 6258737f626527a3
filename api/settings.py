"""Service settings, read from the environment with the prefix ``NERSERVICE_API_``.

The model to serve is ``NERSERVICE_API_MODEL`` (``NERSERVICE_MODEL`` is accepted as a fallback): a saved
model folder, a training output folder (its ``model-best`` is served) or a model-store reference such as
``demo@production`` (resolved through ``NERSERVICE_STORE_DIR`` / the store's own settings).

Every limit says what raising it costs.  The numbers are sized for a 2-core machine serving the default
Bi-LSTM-CNN-Char-CRF: ~450 one-sentence requests/s through the server at 64 clients when the machine is
quiet (bench/results/api.md), half that when it is shared with training jobs.
"""
from __future__ import annotations

import logging
import os
from typing import Literal

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from nerservice.errors import ConfigError
from nerservice.text.prepared import Cost

log = logging.getLogger("nerservice.api")
ENV_PREFIX = "NERSERVICE_API_"
# Budgets are set in tokens; the characters of distinct words the char encoder may run over are allowed at
# this many per token. Measured with the default model (2 cores): ~60-100 us per token of punctuation,
# plus ~5 us per distinct-word character, so a budget's worst case (every token a distinct word of 16+
# characters) costs ~2x its punctuation case, never more.
WORD_CHARS_PER_TOKEN = 16


class ApiSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid", frozen=True,
                                      populate_by_name=True)

    model: str | None = Field(None, validation_alias=AliasChoices("NERSERVICE_API_MODEL", "NERSERVICE_MODEL"))
    # Bearer token for POST /v1/models/reload. Unset or empty = admin endpoints refuse every call (an
    # empty variable, e.g. passed through by docker-compose, must never mean "no token needed").
    admin_token: SecretStr | None = None

    @field_validator("admin_token")
    @classmethod
    def _empty_token_is_no_token(cls, v: SecretStr | None) -> SecretStr | None:
        return v if v is not None and v.get_secret_value().strip() else None

    # --- request limits (checked before anything is queued) ------------------------------------------
    # Raising it: more memory per request (the body is held in full) and longer JSON parsing on the event
    # loop, during which no other request is answered (~2 ms per 100 KiB).
    max_body_bytes: int = Field(512 * 1024, ge=256)
    # Raising it: one request can occupy the model longer (a request is never split across batches), so
    # everyone queued behind it waits.
    max_texts: int = Field(64, ge=1)
    # Raising it: a single text costs ~1 ms of inference per 40 characters here, during which the requests
    # batched with it wait too.
    max_text_chars: int = Field(20_000, ge=1)
    # Model work one request may cause, in tokens (and 16 distinct-word characters per token): a request
    # over it gets 413 NER603 before it is queued. The sizes above bound bytes, not work: 512 KiB of
    # punctuation is ~500k tokens. Raising it: more of the queue's token budget one client can take;
    # 65536 tokens is ~4-7 s of the default model's time on 2 cores, run in pieces between other requests.
    max_request_tokens: int = Field(65_536, ge=1)
    # A request's work goes to the model in pieces of at most this many tokens, one piece per request per
    # micro-batch, so other requests run between the pieces of a large one. Raising it: fewer, fuller model
    # calls for large requests, and a longer wait (~80 us per token here) for the requests behind a piece.
    max_piece_tokens: int = Field(2048, ge=1)
    # Tokens of accepted, not yet tagged work the queue may hold; beyond it the service answers 429 NER700.
    # It bounds how long anything can wait: at ~80 us per token, 262144 tokens is ~20 s of model time.
    max_queue_tokens: int = Field(262_144, ge=1)

    # --- batching ------------------------------------------------------------------------------------
    # Texts combined into one model call. Raising it: higher throughput only until the model saturates
    # (16-64 on 2 cores), then only latency grows. 1 disables batching.
    max_batch_texts: int = Field(64, ge=1)
    # Tokens combined into one model call. Raising it: more activation memory per call (~tokens x 4 KiB
    # for the default model) and longer waits for the requests of one batch (8192 tokens: ~0.5-1 s here).
    max_batch_tokens: int = Field(8192, ge=1)
    # How long the first request of a batch may wait for company when the queue is empty. Raising it adds
    # up to that much latency at low load in exchange for fuller batches at medium load.
    max_wait_ms: float = Field(2.0, ge=0.0)
    # Right after a batch, how long the next one may wait for requests still in transit: clients answered a
    # moment ago usually send their next request within a few ms. It waits only until the first such
    # arrival, then only while arrivals keep coming (max_wait_ms apart), and never once the batch is full.
    # Raising it: up to that much model idle time and latency per batch when nobody comes; 0 turns it off,
    # and under steady load the clients then split into groups that alternate with half-size model calls
    # (~20% less throughput at 64 clients here). 25 rather than 10: on 2 cores a client answered while the
    # next batch's TF threads hold both cores can come back >10 ms late and then waits a whole extra batch;
    # at 64 clients 10 ms gave p99 147-191 ms, 25 ms 115-126 ms at the same throughput (bench/results/api.md).
    merge_wait_ms: float = Field(25.0, ge=0.0)
    # Requests waiting for the model; beyond it the service answers 429. Raising it trades 429s for
    # latency: a full queue of N one-sentence requests is ~N/450 s of waiting on this machine.
    max_queue: int = Field(256, ge=1)
    # Seconds a 429/503 answer tells clients to wait (Retry-After).
    retry_after_s: int = Field(1, ge=0)
    # Sentences per model call inside a batch: the Extractor sorts a batch's sentences by length and tags
    # them in calls of at most this many, each padded to its longest sentence. Raising it: fewer calls but
    # more padding; lowering it: less padding but a fixed per-call cost (~1 ms per LSTM time step). 16-32 was
    # fastest for the default model on 2 cores (1.5x the Extractor's default of 256 on one-sentence texts).
    model_batch_sentences: int = Field(32, ge=1)
    # Tokens per sentence chunk given to the model (longer sentences are cut). Raising it: longer LSTM
    # sequences, more padding for everyone batched with them.
    max_sentence_tokens: int = Field(256, ge=8)
    # "background": batches are padded to a bounded set of shapes and each new shape is XLA-compiled on a
    # background thread while the TF graph answers (in-process ~1.3-1.5x the graph's tokens/s once warm).
    # Off by default: a server's micro-batches span ~100-250 shapes (rows x time x distinct words), each
    # ~0.5-1 s of one of the 2 cores to compile, and a measured run (bench/results/api.md) was slower and
    # had a worse p99 for minutes while compiling. Worth it for a long-running server on more cores.
    xla: Literal["background", "off"] = "off"
    # What computes the emissions (nerservice/runtime/select.py): "auto" = ONNX Runtime when installed (an
    # exported model always; a Keras model is converted in memory at load, same emissions within 1e-5,
    # ~2x the Keras path's tokens/s per core), else Keras; "keras" forces the Keras reference path (needs
    # the training install; `xla` applies to it only); "onnx" refuses to start without ONNX Runtime.
    runtime: Literal["auto", "onnx", "keras"] = "auto"
    # Serve one head (corpus name) of a multi-corpus model alone: only that corpus's types, as its head decodes
    # them (nerservice/multi/head_view.py). Applies to every model this server loads: a reload to a model
    # without that head fails with a coded error and the running model stays. Unset = every head.
    head: str | None = Field(None, min_length=1)
    # ONNX Runtime intra-op threads per model; 0 = one per physical core. Raising it past the cores only
    # adds contention; lower it when several servers share a host.
    ort_threads: int = Field(0, ge=0)
    # Word-feature cache rows per model (ONNX runtime): at most rows x 1 KB (default-size model), filled as
    # words are met; 0 turns it off (every batch recomputes its words' char encoders, ~10% slower).
    word_cache: int = Field(20_000, ge=0)
    # Requests above this many characters are tokenised (once: the sentences counted for the token cap are
    # the ones the Extractor tags) on a worker thread instead of the event loop. Raising it: big requests
    # stall other clients for longer; lowering it: more thread hops (~50 us each).
    count_tokens_inline_chars: int = Field(4096, ge=0)

    # --- HTTP connections (applied by `nerservice serve`, api/server.py) -------------------------------
    # Open connections. One over it gets 1 s to send its request, answered 429 and closed; beyond twice it a
    # new connection is closed at once. Each holds a file descriptor and ~100 KiB of buffers (4096: ~400 MiB
    # at worst, and the process needs a file limit above 2 x 4096). Above the 2,000 connections of the
    # soak (bench/soak.py) and the 500 concurrent clients the 429 backpressure is tested with.
    max_connections: int = Field(4096, ge=1)
    # Seconds a client has to send a request's headers (from connecting, or from its first byte on a
    # kept-alive connection); a slow or silent client is disconnected, so idle sockets cannot pile up.
    header_timeout_s: float = Field(10.0, gt=0)
    # Seconds a client has to send the whole body once the headers are in (512 KiB at 20 KiB/s fits).
    body_timeout_s: float = Field(30.0, gt=0)
    # Seconds an idle kept-alive connection stays open between requests.
    keep_alive_s: int = Field(5, ge=1)

    # --- HTTP ----------------------------------------------------------------------------------------
    # Origins allowed by CORS; empty = no CORS headers at all (the page is served from the same origin).
    cors_origins: list[str] = Field(default_factory=list)
    # Run one extraction on a fixed text right after loading, so the first client does not pay for tracing.
    warmup: bool = True

    @model_validator(mode="after")
    def _budgets_nest(self) -> ApiSettings:
        if self.max_queue_tokens < self.max_request_tokens:
            raise ValueError(f"max_queue_tokens ({self.max_queue_tokens}) must be >= max_request_tokens "
                             f"({self.max_request_tokens}): a request the queue can never hold would wait forever")
        return self

    @staticmethod
    def _budget(tokens: int) -> Cost:
        return Cost(tokens, tokens * WORD_CHARS_PER_TOKEN)

    @property
    def request_budget(self) -> Cost:
        return self._budget(self.max_request_tokens)

    @property
    def piece_budget(self) -> Cost:
        return self._budget(min(self.max_piece_tokens, self.max_batch_tokens))

    @property
    def batch_budget(self) -> Cost:
        return self._budget(self.max_batch_tokens)


NOT_SETTINGS = frozenset({"NERSERVICE_API_IMAGE"})  # docker-compose interpolation, not a server setting


def load_settings(**overrides: object) -> ApiSettings:
    """Settings from the environment (plus explicit overrides), with a coded error instead of a traceback.
    An unknown ``NERSERVICE_API_*`` variable is an error, so a typo (``..._ADMIN_TOKN``) never silently
    leaves a default in place; deployment variables that share the prefix but are not settings (the compose
    file's image name) are listed in NOT_SETTINGS."""
    known = {ENV_PREFIX + name.upper() for name in ApiSettings.model_fields} | NOT_SETTINGS
    unknown = sorted(k for k in os.environ if k.upper().startswith(ENV_PREFIX) and k.upper() not in known)
    if unknown:
        raise ConfigError(f"unknown API setting(s) {', '.join(unknown)}",
                          hint=f"known: {', '.join(sorted(known - NOT_SETTINGS))}")
    try:
        return ApiSettings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(f"{ENV_PREFIX}{'.'.join(str(x) for x in e['loc']).upper()}: {e['msg']}"
                             for e in exc.errors())
        raise ConfigError(f"invalid API settings: {problems}") from None
