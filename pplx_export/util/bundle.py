"""The capture bundle's format: recorded request/response pairs, as files. Pure data + I/O.

A bundle is a folder or a `.zip` holding `capture.json` (what was captured, by which
version, the parse summary), `exchanges/NNNN.json` (one request and its response each, in
the order they were sent) and `markdown/` (the rendered thread pages). `pplx-export capture`
and `--write-responses` write it (redacted: `site/record.py`); the emulator serves it back
(`python -m pplx_export.emulator --replay BUNDLE`) and so does the capture itself, to render
its Markdown from exactly what the bundle holds. Both sides share this module, the only
layer they share (util).

An exchange:

    {"n": 1,
     "request": {"method": "GET", "host": "https://www.perplexity.ai", "path": "/rest/…",
                 "query": [["version", "2.18"], …], "headers": {…}, "json": … | "text": …},
     "response": {"status": 200, "headers": {…}, "json": … | "text": … | "base64": …}
                 | {"error": "network error: …"}}
"""

from __future__ import annotations

import base64
import io
import json
import zipfile
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from pplx_export.util.signed_url import is_signature_param

CAPTURE_JSON = "capture.json"
EXCHANGES_DIR = "exchanges"
MARKDOWN_DIR = "markdown"
FORMAT = 1


def body_fields(content: bytes, content_type: str = "") -> dict[str, Any]:
    """A body as the bundle stores it: parsed JSON, text, or base64 for binary."""
    if not content:
        return {}
    if "json" in content_type or content[:1] in (b"{", b"["):
        try:
            return {"json": json.loads(content)}
        except ValueError:
            pass
    try:
        return {"text": content.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(content).decode("ascii")}


def body_bytes(fields: dict[str, Any]) -> bytes:
    """The bytes of a body stored by `body_fields`."""
    if "json" in fields:
        return json.dumps(fields["json"], ensure_ascii=False).encode("utf-8")
    if "text" in fields:
        return str(fields["text"]).encode("utf-8")
    if "base64" in fields:
        return base64.b64decode(str(fields["base64"]))
    return b""


def exchange_name(n: int) -> str:
    return f"{EXCHANGES_DIR}/{n:04d}.json"


def dumps(doc: Any) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=1, sort_keys=False) + "\n"


# ------------------------------------------------------------------ reading


def read_bundle(path: Path) -> dict[str, bytes]:
    """Every file of a bundle (folder or zip) by its relative POSIX path."""
    files: dict[str, bytes] = {}
    if path.is_dir():
        for f in sorted(path.rglob("*")):
            if f.is_file():
                files[f.relative_to(path).as_posix()] = f.read_bytes()
        return files
    with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as zf:
        for name in sorted(zf.namelist()):
            if not name.endswith("/"):
                files[name] = zf.read(name)
    return files


def exchanges_of(files: dict[str, bytes]) -> list[dict[str, Any]]:
    """The recorded exchanges, in the order they were sent."""
    names = sorted(n for n in files if n.startswith(EXCHANGES_DIR + "/") and n.endswith(".json"))
    return [json.loads(files[n]) for n in names]


def load_exchanges(path: Path) -> list[dict[str, Any]]:
    return exchanges_of(read_bundle(path))


# ------------------------------------------------------------------ replay


def request_key(method: str, path: str, query: Iterable[tuple[str, str]]) -> str:
    """What identifies a request for replay: method, path, the query without signatures."""
    kept = sorted((k, v) for k, v in query if not is_signature_param(k))
    return f"{method.upper()} {path} {json.dumps(kept)}"


def _body_key(fields: dict[str, Any]) -> str:
    return json.dumps(fields.get("json", fields.get("text")), sort_keys=True)


class Replay:
    """Answers requests from recorded exchanges: the same request gets the recorded
    responses in their order (the last one again once they run out). A request matches on
    method, path and query (signatures left out), and on its JSON body when one recorded
    request of that key has the same body."""

    def __init__(self, exchanges: list[dict[str, Any]]) -> None:
        self.exchanges = exchanges
        self._queues: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        self._last: dict[str, dict[str, Any]] = {}
        self.hosts: list[str] = []
        for ex in exchanges:
            req = ex.get("request") or {}
            query = [tuple(p) for p in req.get("query") or []]
            key = request_key(str(req.get("method", "GET")), str(req.get("path", "")), query)
            self._queues[key + " " + _body_key(req)].append(ex)
            self._queues[key].append(ex)
            host = str(req.get("host") or "")
            if host and host not in self.hosts:
                self.hosts.append(host)

    @classmethod
    def load(cls, path: Path) -> Replay:
        return cls(load_exchanges(path))

    def find(
        self, method: str, path: str, query: str | Iterable[tuple[str, str]], body: bytes
    ) -> dict[str, Any] | None:
        """The recorded response for a request (None: nothing recorded for it)."""
        pairs = parse_qsl(query, keep_blank_values=True) if isinstance(query, str) else query
        key = request_key(method, path, pairs)
        fields = body_fields(body, "json")
        for k in (key + " " + _body_key(fields), key):
            queue = self._queues.get(k)
            if queue:
                ex = queue.popleft()
                self._last[k] = ex
                self._drop_from_others(ex, k)
                return dict(ex.get("response") or {})
            if k in self._last:
                return dict(self._last[k].get("response") or {})
        return None

    def _drop_from_others(self, ex: dict[str, Any], used: str) -> None:
        # Each exchange sits in two queues (with and without its body); serve it once.
        for k, queue in self._queues.items():
            if k != used and ex in queue:
                queue.remove(ex)

    def rewrite_hosts(self, content: bytes, base_url: str) -> bytes:
        """Recorded hosts in a body pointed at `base_url` (the replaying server)."""
        for host in self.hosts:
            content = content.replace(host.encode(), base_url.encode())
        return content


def iter_files(root: Path) -> Iterator[Path]:
    yield from (p for p in sorted(root.rglob("*")) if p.is_file())
