"""An incremental reader of one array inside a JSON object (stdlib only).

Perplexity's "Export my data" file is `{"conversations": [...]}` and runs to hundreds of MB
for big accounts (protocol §9.8): `json.load` would hold all of it, twice over, in memory.
This reader decodes the stream in chunks and hands out the array's elements one at a time,
so memory follows the largest single element, not the file.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterator
from typing import IO, Any

CHUNK = 1 << 20
_WS = " \t\r\n"
_decoder = json.JSONDecoder()


class StreamFormatError(ValueError):
    """The stream is not the JSON it should be (truncated, damaged, another shape)."""


class _Buffer:
    """Decoded text of the stream with a read position; refills on demand."""

    def __init__(self, stream: IO[bytes], on_bytes: Callable[[int], None] | None) -> None:
        self.stream = stream
        self.text = ""
        self.pos = 0
        self.eof = False
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.on_bytes = on_bytes
        self.consumed = 0  # characters dropped from the front (for error offsets)

    def fill(self, size: int = 0) -> bool:
        """Append up to `size` (default CHUNK) more bytes of the stream; False at its end."""
        if self.eof:
            return False
        data = self.stream.read(size or CHUNK)
        if self.on_bytes is not None and data:
            self.on_bytes(len(data))
        try:
            more = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise StreamFormatError(f"not UTF-8 text near character {self.where}") from exc
        if not data:
            self.eof = True
        if self.pos > len(self.text) // 2:
            # Drop what was read, so the buffer stays near the size of one element.
            self.consumed += self.pos
            self.text = self.text[self.pos :]
            self.pos = 0
        self.text += more
        return bool(data) or bool(more)

    @property
    def where(self) -> int:
        return self.consumed + self.pos

    def skip_ws(self) -> str:
        """The next non-blank character (not consumed); "" at the end of the stream."""
        while True:
            text, pos = self.text, self.pos
            while pos < len(text) and text[pos] in _WS:
                pos += 1
            self.pos = pos
            if pos < len(text):
                return text[pos]
            if not self.fill():
                return ""

    def expect(self, char: str, what: str) -> None:
        found = self.skip_ws()
        if found != char:
            shown = repr(found) if found else "the end of the file"
            raise StreamFormatError(f"expected {what} near character {self.where}, found {shown}")
        self.pos += 1

    def value(self) -> Any:
        """Decode the JSON value at the position; reads more until it is complete."""
        self.skip_ws()
        size = CHUNK
        while True:
            try:
                value, end = _decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self.fill(size):
                    size = min(size * 2, 64 << 20)  # a big element: fewer re-parses
                    continue
                raise StreamFormatError(
                    f"damaged or truncated JSON near character {self.consumed + exc.pos}: {exc.msg}"
                ) from exc
            if end == len(self.text) and not self.eof and self.fill(size):
                continue  # a number or literal may go on in the next chunk
            self.pos = end
            return value


def iter_array_in_object(
    stream: IO[bytes], key: str, *, on_bytes: Callable[[int], None] | None = None
) -> Iterator[Any]:
    """The elements of the array at `key` of the top-level object in `stream`, one by one.

    Other keys' values are decoded and dropped. Raises StreamFormatError on anything that is
    not such an object (the elements read so far have been handed out already), and when
    the key is missing. `on_bytes(n)` is told of every n bytes read (progress).
    """
    buf = _Buffer(stream, on_bytes)
    buf.expect("{", "a JSON object")
    found = False
    if buf.skip_ws() == "}":
        buf.pos += 1
    else:
        while True:
            name = buf.value()
            if not isinstance(name, str):
                raise StreamFormatError(f"expected a key near character {buf.where}")
            buf.expect(":", "':'")
            if name == key and not found:
                found = True
                yield from _elements(buf)
            else:
                buf.value()
            nxt = buf.skip_ws()
            if nxt == "}":
                buf.pos += 1
                break
            buf.expect(",", "',' or '}'")
    if buf.skip_ws():
        raise StreamFormatError(f"unexpected data after the JSON object near {buf.where}")
    if not found:
        raise StreamFormatError(f"no {key!r} array in the JSON object")


def _elements(buf: _Buffer) -> Iterator[Any]:
    buf.expect("[", "an array")
    if buf.skip_ws() == "]":
        buf.pos += 1
        return
    while True:
        yield buf.value()
        if buf.skip_ws() == "]":
            buf.pos += 1
            return
        buf.expect(",", "',' or ']'")
