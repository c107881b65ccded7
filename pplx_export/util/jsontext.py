"""`json.dumps(obj, ensure_ascii=False, indent=n)`, byte for byte, several times faster.

With `indent`, CPython 3.11's json module gives up its C encoder and walks the value with
nested Python generators; thread.json, the assets manifest and sources.json are written
that way for every thread of a re-render. This walk builds one list of strings instead and
leaves strings to the same C `encode_basestring`. Anything that is not plain JSON data (an
unserialisable object, a cycle) is handed to `json.dumps` itself, so errors are unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any, TypeVar

T = TypeVar("T")

_INF = float("inf")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INF:
        return "Infinity"
    if value == -_INF:
        return "-Infinity"
    return float.__repr__(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return encode_basestring(key)
    if isinstance(key, float):
        return encode_basestring(_float(key))
    if key is True:
        return '"true"'
    if key is False:
        return '"false"'
    if key is None:
        return '"null"'
    if isinstance(key, int):
        return encode_basestring(int.__repr__(key))
    raise TypeError(key)


def _walk(value: Any, out: list[str], newline: str, step: str) -> None:
    # Same order of type checks as json.encoder._make_iterencode.
    if isinstance(value, str):
        out.append(encode_basestring(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[]")
            return
        inner = newline + step
        sep = "[" + inner
        for item in value:
            out.append(sep)
            sep = "," + inner
            if type(item) is str:
                out.append(encode_basestring(item))
            else:
                _walk(item, out, inner, step)
        out.append(newline + "]")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = newline + step
        sep = "{" + inner
        for key, item in value.items():
            out.append(sep)
            sep = "," + inner
            out.append(encode_basestring(key) if type(key) is str else _key(key))
            out.append(": ")
            if type(item) is str:
                out.append(encode_basestring(item))
            else:
                _walk(item, out, inner, step)
        out.append(newline + "}")
    else:
        raise TypeError(type(value).__name__)


def dumps_indented(value: Any, indent: int) -> str:
    """Exactly `json.dumps(value, ensure_ascii=False, indent=indent)`."""
    out: list[str] = []
    try:
        _walk(value, out, "\n", " " * indent)
    except (TypeError, RecursionError):
        return json.dumps(value, ensure_ascii=False, indent=indent)  # its error, or its text
    return "".join(out)


def identical(a: Any, b: Any) -> bool:
    """True when `a` and `b` dump to the same JSON text: equal, with every dict's keys in the
    same order (which `==` ignores). `==` runs first, in C; the order walk only after it."""
    return bool(a == b) and _same_order(a, b)


_SCALARS = (str, int, float, bool, type(None))


def _same_order(a: Any, b: Any) -> bool:
    # Equal already, so only what `==` blurs is left: dict key order, and 1 == 1.0 == True,
    # which dump differently.
    if isinstance(a, dict):
        if list(a) != list(b):
            return False
        pairs: Any = zip(a.values(), b.values(), strict=True)
    elif isinstance(a, list):
        pairs = zip(a, b, strict=True)
    else:
        return type(a) is type(b)
    for x, y in pairs:
        kind = type(x)
        if kind is not type(y):
            return False
        if kind not in _SCALARS and not _same_order(x, y):
            return False
    return True


# json.loads without its Python layers (two whitespace regexes, two calls, the encoding
# sniff for bytes): the C scanner decodes a document that starts at 0 and ends at the end,
# which is what archive files and payload strings hold; anything else goes to json.loads.
# (typeshed does not declare the attribute JSONDecoder.__init__ sets.)
_scan_once: Callable[[str, int], tuple[Any, int]] = json.decoder.JSONDecoder().scan_once  # type: ignore[attr-defined]

# msgspec's decoder, where it is installed: 2-3x faster than the stdlib scanner on archive
# files (half of a re-render's time is decoding). Whatever it accepts it decodes to exactly
# json.loads' value (integers of any size included; property-tested); whatever it refuses
# (NaN, 1e400, lone surrogates, non-UTF-8 bytes, bad JSON) goes to the stdlib path, which
# then gives json.loads' value or json.loads' error.
try:
    import msgspec

    _fast_decode: Callable[[str | bytes], Any] | None = msgspec.json.Decoder().decode
    _fast_encode: Callable[[Any], bytes] | None = msgspec.json.Encoder().encode
    # ValueError: a str holding a lone surrogate cannot even be encoded for it; TypeError:
    # it takes no str subclass (json.loads does).
    _FAST_ERRORS: tuple[type[Exception], ...] = (msgspec.MsgspecError, ValueError, TypeError)
except ImportError:  # pragma: no cover - msgspec is a dependency; keep working without it
    _fast_decode = None
    _fast_encode = None
    _FAST_ERRORS = ()


def loads(data: str | bytes) -> Any:
    """Exactly `json.loads(data)`: the same value, the same errors."""
    if _fast_decode is not None:
        try:
            return _fast_decode(data)
        except _FAST_ERRORS:
            pass
    text = (
        data if isinstance(data, str) else data.decode(json.detect_encoding(data), "surrogatepass")
    )
    try:
        value, end = _scan_once(text, 0)
        if end == len(text):
            return value
    except (StopIteration, ValueError, RecursionError):
        pass  # leading blanks, or not JSON: json.loads decides
    return json.loads(text)


def loads_as(data: bytes, kind: type[T]) -> T | None:
    """`data` decoded and checked against `kind` (dataclasses, named tuples, lists and dicts
    of them) in one C pass: much faster than `loads` then building the objects. None when
    the data does not fit `kind` exactly, or msgspec is not installed: the caller then
    takes the lenient path (`loads`, and its own checks value by value)."""
    if _fast_decode is None:  # pragma: no cover - msgspec is a dependency
        return None
    try:
        return msgspec.json.decode(data, type=kind)
    except _FAST_ERRORS:
        return None


def _plain(value: Any) -> Any:
    """json.dumps' fallback for the dataclasses msgspec's encoder writes as objects."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps_compact(value: Any) -> bytes:
    """`value` as compact UTF-8 JSON (no spaces, non-ASCII as is), for the derived caches
    that only `loads` reads back: through msgspec's encoder where it can (several times
    faster than `json.dumps`), else the stdlib. Deterministic; the two may spell a float or
    an escape differently, never a value differently."""
    if _fast_encode is not None:
        try:
            return _fast_encode(value)
        except (TypeError, ValueError, OverflowError, UnicodeEncodeError):
            pass
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_plain)
    return text.encode("utf-8", "surrogatepass")
