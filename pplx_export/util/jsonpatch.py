"""RFC 6902 JSON Patch, the small part the ask stream needs (protocol §9.6), and RFC 6901 paths.

`apply_patch(doc, ops)` returns a new document; the input is never changed (values are
deep-copied on the way in, so later patches cannot reach into an earlier state). All six
operations are here (`add`, `remove`, `replace`, `move`, `copy`, `test`); a bad operation or
path raises `PatchError`, and the whole patch then has no effect (RFC 6902 §5).

The stdlib has no JSON Patch, and the one well-known package (`jsonpatch`) would add two
dependencies for ~100 lines; so it lives here, with its tests (tests/test_jsonpatch.py).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any


class PatchError(ValueError):
    """An operation that cannot apply: unknown op, bad path, missing target, failed test."""


def parse_pointer(path: str) -> list[str]:
    """RFC 6901: "" is the whole document; "/a/b~1c/~0" -> ["a", "b/c", "~"]."""
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"a JSON pointer starts with '/': {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(token: str, size: int, *, append: bool) -> int:
    if append and token == "-":
        return size
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"not an array index: {token!r}")
    index = int(token)
    if index > size or (index == size and not append):
        raise PatchError(f"array index {index} out of range (length {size})")
    return index


def _parent(doc: Any, tokens: list[str]) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f"no member {token!r}")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(token, len(node), append=False)]
        else:
            raise PatchError(f"cannot descend into {type(node).__name__} at {token!r}")
    return node


def _locate(doc: Any, path: str) -> tuple[Any, str]:
    """The container of the target of `path` (not "": the whole document), and its key there."""
    tokens = parse_pointer(path)
    return _parent(doc, tokens), tokens[-1]


def get_value(doc: Any, path: str) -> Any:
    """The value at `path` (RFC 6901); PatchError when there is none."""
    if path == "":
        return doc
    parent, last = _locate(doc, path)
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"no member {last!r} at {path!r}")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(last, len(parent), append=False)]
    raise PatchError(f"{path!r} is inside a {type(parent).__name__}")


def _add(doc: Any, path: str, value: Any) -> Any:
    if path == "":
        return value
    parent, last = _locate(doc, path)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(last, len(parent), append=True), value)
    else:
        raise PatchError(f"cannot add into a {type(parent).__name__} at {path!r}")
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    if path == "":
        raise PatchError("cannot remove the whole document")
    parent, last = _locate(doc, path)
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"no member {last!r} to remove at {path!r}")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(last, len(parent), append=False))
    raise PatchError(f"cannot remove from a {type(parent).__name__} at {path!r}")


def _apply_one(doc: Any, op: Mapping[str, Any]) -> Any:
    name = op.get("op")
    path = op.get("path")
    if not isinstance(path, str):
        raise PatchError(f"operation without a path: {dict(op)!r}")
    if name in ("add", "replace", "test") and "value" not in op:
        raise PatchError(f"{name} without a value at {path!r}")
    if name == "add":
        return _add(doc, path, copy.deepcopy(op["value"]))
    if name == "remove":
        return _remove(doc, path)[0]
    if name == "replace":
        if parse_pointer(path):
            get_value(doc, path)  # the target must exist
            doc, _ = _remove(doc, path)
        return _add(doc, path, copy.deepcopy(op["value"]))
    if name in ("move", "copy"):
        source = op.get("from")
        if not isinstance(source, str):
            raise PatchError(f"{name} without a from at {path!r}")
        if name == "move":
            if path != source and path.startswith(source + "/"):
                raise PatchError(f"cannot move {source!r} into its own child {path!r}")
            doc, value = _remove(doc, source)
        else:
            value = copy.deepcopy(get_value(doc, source))
        return _add(doc, path, value)
    if name == "test":
        if get_value(doc, path) != op["value"]:
            raise PatchError(f"test failed at {path!r}")
        return doc
    raise PatchError(f"unknown operation {name!r}")


def apply_patch(doc: Any, ops: Iterable[Mapping[str, Any]]) -> Any:
    """`doc` with every operation of `ops` applied in order; `doc` itself is left as it was."""
    result = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, Mapping):
            raise PatchError(f"an operation must be an object, not {type(op).__name__}")
        result = _apply_one(result, op)
    return result
