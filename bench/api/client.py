"""A deliberately minimal HTTP/1.1 keep-alive client for closed-loop load.

The load generator shares the 2 cores with the server, so its own cost per request matters: httpx or
aiohttp spend ~150-300 us of CPU per request, this spends ~20 us (pre-encoded request bytes, one
readuntil for the head, one readexactly for the body). It supports exactly what the benchmark sends:
POST with Content-Length, responses with Content-Length.
"""
from __future__ import annotations

import asyncio


class HttpConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, host: str, port: int) -> "HttpConnection":
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, host)

    def encode_post(self, path: str, body: bytes) -> bytes:
        head = (f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode("ascii")
        return head + body

    async def send(self, raw: bytes) -> tuple[int, bytes]:
        """Send one pre-encoded request and read its response: (status, body)."""
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length = 0
        for line in lines[1:]:
            if line[:15].lower() == b"content-length:":
                length = int(line[15:].strip())
                break
        body = await self.reader.readexactly(length) if length else b""
        return status, body

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except OSError:
            pass
