"""Bytes -> lines, with encoding errors that say exactly where the bad byte is.

Lines are split on ``\\n`` only (never ``str.splitlines``, which also splits on ``\\x1c``, ``\\u2028``
and friends that can legitimately sit inside a token), so line numbers match what an editor or
``sed -n Np`` shows.  A trailing ``\\r`` (CRLF files) is stripped later, by the parser.
"""
from __future__ import annotations

from nerservice.errors import CorpusEncodingError

UTF8_BOM = b"\xef\xbb\xbf"


def split_text(text: str) -> list[str]:
    if text.startswith("\ufeff"):  # a BOM that survived decoding (parse_text callers): invisible, drop it
        text = text[1:]
    return text.split("\n")


def decode_lines(data: bytes, *, source: str, lenient: bool) -> tuple[list[str], dict[int, str]]:
    """Decode UTF-8 ``data`` (BOM tolerated) into lines.

    Strict: the first invalid byte raises ``CorpusEncodingError`` with file, line, byte offset (0-based,
    in the file as given, BOM included) and byte column.  Lenient: undecodable lines are decoded with
    U+FFFD replacements and returned in ``bad`` (1-based line -> reason) so the parser can skip the
    sentences that contain them.
    """
    skip = len(UTF8_BOM) if data.startswith(UTF8_BOM) else 0
    try:
        # One C-level decode of the whole file is the fast path; per-line work happens only on failure.
        # Only the leading BOM is dropped: a second one is data, as in the lenient path below.
        return data[skip:].decode("utf-8").split("\n"), {}
    except UnicodeDecodeError as exc:
        offset = exc.start + skip
    if not lenient:
        raise _encoding_error(data, offset, source=source)
    return _decode_leniently(data, skip)


def _position(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return line, column


def _describe(data: bytes, offset: int) -> str:
    line, column = _position(data, offset)
    return f"invalid UTF-8 byte 0x{data[offset]:02x} at byte offset {offset} (line {line}, byte column {column})"


def _encoding_error(data: bytes, offset: int, *, source: str) -> CorpusEncodingError:
    line, column = _position(data, offset)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        hint = "the file looks UTF-16; re-encode it as UTF-8 (iconv -f utf-16 -t utf-8)"
    else:
        hint = ("re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8), or pass --lenient (lenient=True "
                "in Python) to skip the sentences with bad bytes")
    return CorpusEncodingError(
        f"{source}:{line}: {_describe(data, offset)}", hint=hint,
        file=source, line=line, offset=offset, column=column,
    )


def _decode_leniently(data: bytes, skip: int) -> tuple[list[str], dict[int, str]]:
    lines: list[str] = []
    bad: dict[int, str] = {}
    pos = skip
    for number, raw in enumerate(data[skip:].split(b"\n"), 1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            lines.append(raw.decode("utf-8", errors="replace"))
            bad[number] = _describe(data, pos + exc.start)
        pos += len(raw) + 1
    return lines, bad
