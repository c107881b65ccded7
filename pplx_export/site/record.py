"""Recording a run's traffic, redacted by construction (`capture`, `--write-responses`).

`Recorder` is handed to the client through `NetRuntime.recorder`; `ApiClient` calls
`record()` with every request it sends (API calls, CDN downloads, the SSE ask's request)
and the response it got. What is kept is redacted before it is stored:

* request headers: only `User-Agent`, `Accept` and `Content-Type`. `Cookie` and
  `Authorization` are never read, so they cannot be recorded;
* response headers: only the ones that matter to the client (content type, retry and rate
  limit headers, `Location`, Cloudflare's markers); `Set-Cookie` never;
* bodies (JSON walked, JSON-in-strings too): `read_write_token` values, e-mail addresses,
  user ids, the names of the account and of space members, and the signatures of signed
  URLs become stable placeholders (`email-1@redacted.invalid`, `user-id-1`, `name-1`,
  `rwt-1`, `sig-1`: the same value always gets the same one, so the structure stays
  readable); names and ids learned from one response are replaced in every later one;
* without `keep_content`, every string that reads as text (it holds a space or a non-ASCII
  letter) keeps its length and shape but not its words: letters become `x`/`X`, digits,
  punctuation and Markdown stay, so `[1]` markers, tables and headings still parse.

Identifiers, enum values, timestamps and URLs (their signatures excepted) are kept: they are
what a parser reads. `secrets()` is what the final scan looks for.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from pplx_export.util import bundle, threadref
from pplx_export.util.atomic import atomic_write_text
from pplx_export.util.signed_url import is_signature_param
from pplx_export.util.spans import outside

# Request headers worth keeping (cookies and authorization are never among them).
REQUEST_HEADERS = ("user-agent", "accept", "content-type")
# Response headers that change what the client does, or say who answered.
RESPONSE_HEADERS = (
    "content-type",
    "retry-after",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "location",
    "cf-mitigated",
    "server",
)
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_URL = re.compile(r"https?://[^\s'\"<>)\]]+")
_ID_KEYS = frozenset({"author_id", "user_id", "owner_id", "uid", "userid", "creator_id"})
_NAME_KEYS = frozenset(
    {"author_username", "author_name", "username", "user_name", "display_name", "author"}
)
# A dict with one of these keys describes a person: its `id` and `name` are theirs.
_PERSON_MARKERS = frozenset({"email", "username", "user_permission", "author_id"})
_TOKEN_KEYS = frozenset({"read_write_token"})
# A title slug (§9.4): words, then the 22 base64url characters naming the thread.
_SLUG = re.compile(r"\b((?:[a-z0-9]+-)+)([A-Za-z0-9_-]{22})(?![A-Za-z0-9_-])")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
MIN_SECRET = 8  # shorter cookie values ("1", "en") are flags, not credentials
_PLACEHOLDER = re.compile(r"^(email-\d+@redacted\.invalid|user-id-\d+|name-\d+|rwt-\d+|sig-\d+)$")


def shape(text: str) -> str:
    """`text` with its letters replaced (case kept), everything else as it was."""
    return "".join(("X" if ch.isupper() else "x") if ch.isalpha() else ch for ch in text)


def _is_prose(text: str) -> bool:
    return any(ch.isspace() for ch in text) or any(ch.isalpha() and ord(ch) > 127 for ch in text)


@dataclass
class Redactor:
    keep_content: bool = False
    _maps: dict[str, dict[str, str]] = field(default_factory=dict)
    _learned: dict[str, str] = field(default_factory=dict)  # value -> placeholder
    _pattern: re.Pattern[str] | None = None
    tokens: set[str] = field(default_factory=set)

    # -- placeholders ----------------------------------------------------------------------

    def placeholder(self, kind: str, value: str) -> str:
        if _PLACEHOLDER.match(value):
            return value
        table = self._maps.setdefault(kind, {})
        if value not in table:
            n = len(table) + 1
            table[value] = f"email-{n}@redacted.invalid" if kind == "email" else f"{kind}-{n}"
        return table[value]

    def learn(self, kind: str, value: str) -> str:
        """A placeholder for `value`, which is then replaced wherever it shows up."""
        value = value.strip()
        if not value or _PLACEHOLDER.match(value):
            return value
        ph = self.placeholder(kind, value)
        if len(value) >= 3 and value not in self._learned:
            self._learned[value] = ph
            words = sorted(self._learned, key=len, reverse=True)
            self._pattern = re.compile(
                r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, words)) + r")(?![A-Za-z0-9_])"
            )
        return ph

    # -- walking ---------------------------------------------------------------------------

    def learn_from(self, value: Any) -> None:
        """First pass over a body: the ids, names and tokens it holds."""
        if isinstance(value, dict):
            person = any(k in value for k in _PERSON_MARKERS)
            for key, item in value.items():
                k = str(key).lower()
                if isinstance(item, str) and item:
                    if k in _TOKEN_KEYS:
                        self.tokens.add(item)
                        self.placeholder("rwt", item)
                    elif k in _ID_KEYS or (person and k == "id"):
                        self.learn("user-id", item)
                    elif k in _NAME_KEYS or (person and k == "name"):
                        self.learn("name", item)
                elif isinstance(item, int | float) and k in _ID_KEYS and not isinstance(item, bool):
                    self.learn("user-id", str(item))
                else:
                    self.learn_from(item)
        elif isinstance(value, list):
            for item in value:
                self.learn_from(item)
        elif isinstance(value, str) and value[:1] in ("{", "[") and len(value) > 1:
            decoded = _decode(value)
            if decoded is not None:
                self.learn_from(decoded)

    def redact(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self.redact(v, str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact(v, key) for v in value]
        if isinstance(value, str):
            return self.text(value, key)
        if isinstance(value, int) and not isinstance(value, bool) and key.lower() in _ID_KEYS:
            return self.placeholder("user-id", str(value))
        return value

    def text(self, value: str, key: str = "", *, structural: bool = False) -> str:
        """A string redacted; `structural` (headers, paths): secrets only, never shaped."""
        if not value:
            return value
        if key.lower() in _TOKEN_KEYS:
            self.tokens.add(value)
            return self.placeholder("rwt", value)
        if value[:1] in ("{", "[") and len(value) > 1:
            decoded = _decode(value)
            if decoded is not None:
                import json

                return json.dumps(self.redact(decoded), ensure_ascii=False)
        words = not self.keep_content and not structural
        out = _URL.sub(lambda m: self.url(m.group(0), words=words), value)
        out = _EMAIL.sub(lambda m: self.placeholder("email", m.group(0)), out)
        if self._pattern is not None:
            out = self._pattern.sub(lambda m: self._learned.get(m.group(1), m.group(1)), out)
        if not self.keep_content and not structural:
            out = _shape_keeping(out) if _is_prose(out) else _SLUG.sub(_slug_words, out)
        return out

    def url(self, url: str, *, words: bool = False) -> str:
        """A URL with the values of its signature parameters replaced; with `words`, the
        words of its path and query shaped too (a source's address says what was searched),
        except on perplexity.ai, whose thread links are structure."""
        parts = urlsplit(url)
        words = words and not _is_site(parts.netloc)
        path = shape_path(parts.path) if words else parts.path
        if not parts.query:
            return parts._replace(path=path).geturl()
        pairs = parse_qsl(parts.query, keep_blank_values=True)

        def value(k: str, v: str) -> str:
            if is_signature_param(k):
                return self.placeholder("sig", v)
            return shape(v) if words else v

        query = "&".join(f"{quote(k, safe='')}={quote(value(k, v), safe='')}" for k, v in pairs)
        if not words and not any(is_signature_param(k) for k, _ in pairs):
            query = parts.query
        return parts._replace(path=path, query=query).geturl()

    def query(self, pairs: list[tuple[str, str]], *, words: bool = False) -> list[list[str]]:
        def value(k: str, v: str) -> str:
            if is_signature_param(k):
                return self.placeholder("sig", v)
            return shape(v) if words else self.text(v, k)

        return [[k, value(k, v)] for k, v in pairs]

    def secrets(self) -> set[str]:
        return set(self.tokens) | set(self._maps.get("sig", {}))


def _is_site(netloc: str) -> bool:
    host = netloc.rsplit("@", 1)[-1].split(":", 1)[0].lower()
    return host == "perplexity.ai" or host.endswith(".perplexity.ai")


def shape_path(path: str) -> str:
    """A URL path with the words of each segment shaped; UUID segments kept."""
    return "/".join(seg if _UUID.fullmatch(seg) else shape(seg) for seg in path.split("/"))


def _slug_words(m: re.Match[str]) -> str:
    """A title slug's words shaped, its 22-character id kept; anything else (a UUID) kept."""
    if _UUID.fullmatch(m.group(0)) or threadref.slug_uuid(m.group(0)) is None:
        return m.group(0)
    return shape(m.group(1)) + m.group(2)


def _shape_keeping(text: str) -> str:
    """Shape prose, but keep the placeholders and URLs inside it readable."""
    keep = re.compile(
        r"email-\d+@redacted\.invalid|user-id-\d+|name-\d+|rwt-\d+|sig-\d+|https?://\S+"
    )
    return outside(text, keep, shape)


def _decode(text: str) -> Any:
    import json

    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


class Recorder:
    """The redacted exchanges of a run, in order; `sink` (optional) gets each one as it is
    recorded (`--write-responses` writes it to disk then, so a long run keeps no memory)."""

    def __init__(
        self,
        *,
        keep_content: bool = False,
        sink: Callable[[dict[str, Any]], None] | None = None,
        keep: bool = True,
    ) -> None:
        self.redactor = Redactor(keep_content=keep_content)
        self.exchanges: list[dict[str, Any]] = []
        self._sink = sink
        self._keep = keep
        self._lock = threading.Lock()
        self._n = 0
        self._jars: list[dict[str, str]] = []

    def hold(self, cookies: dict[str, str]) -> None:
        """A cookie jar the run uses (a live dict): its values are secrets to scan for."""
        if not any(jar is cookies for jar in self._jars):
            self._jars.append(cookies)

    def secrets(self) -> set[str]:
        """Every value the output must not contain: the session and account tokens and any
        other cookie long enough to be a credential, the write tokens and URL signatures
        seen."""
        held = {v for jar in self._jars for v in jar.values() if len(v) >= MIN_SECRET}
        return held | {v for v in self.redactor.secrets() if len(v) >= MIN_SECRET}

    def leaks(self, text: str) -> list[str]:
        """The secrets found in `text` (named by their length only, never shown)."""
        return [f"a {len(v)}-character secret" for v in self.secrets() if v in text]

    def record(
        self,
        request: Any,
        response: Any = None,
        *,
        error: str = "",
        content: bytes | None = None,
        cdn: bool = False,
    ) -> None:
        """One request (an `httpx.Request`) and its `httpx.Response` (read), or the error
        that ended it. `content`: the body when the response was streamed to a file.
        `cdn`: a download, whose URL came from a response (its path is redacted as the
        URL in that response was, so the two still match)."""
        with self._lock:
            self._n += 1
            doc = self._exchange(self._n, request, response, error, content, cdn)
            if self._keep:
                self.exchanges.append(doc)
            if self._sink is not None:
                self._sink(doc)

    def _exchange(
        self, n: int, request: Any, response: Any, error: str, content: bytes | None, cdn: bool
    ) -> dict[str, Any]:
        r = self.redactor
        req_body = bundle.body_fields(
            request.content or b"", request.headers.get("content-type", "")
        )
        resp_body: dict[str, Any] = {}
        if response is not None:
            raw = content if content is not None else response.content
            resp_body = bundle.body_fields(raw, response.headers.get("content-type", ""))
        # Learn names and ids first (the session probe teaches the account's), then redact.
        r.learn_from(req_body.get("json"))
        r.learn_from(resp_body.get("json"))
        url = request.url
        req: dict[str, Any] = {
            "method": request.method,
            "host": f"{url.scheme}://{url.netloc.decode('ascii')}",
            "path": _path(r, url.path, words=cdn and not r.keep_content),
            "query": r.query(
                parse_qsl(url.query.decode("ascii"), keep_blank_values=True),
                words=cdn and not r.keep_content,
            ),
            "headers": {k: request.headers[k] for k in REQUEST_HEADERS if k in request.headers},
        }
        req.update(_redact_body(r, req_body))
        doc: dict[str, Any] = {"n": n, "request": req}
        if response is None:
            doc["response"] = {"error": r.text(error)}
            return doc
        resp: dict[str, Any] = {
            "status": response.status_code,
            "headers": {
                k: r.text(response.headers[k], structural=True)
                for k in RESPONSE_HEADERS
                if k in response.headers
            },
        }
        resp.update(_redact_body(r, resp_body))
        doc["response"] = resp
        return doc


def _path(r: Redactor, path: str, *, words: bool) -> str:
    # An API path is structure: only learned names, e-mails and a slug's words are
    # replaced. A download's path is shaped as its URL was in the response that gave it.
    if words:
        return shape_path(path)
    out = _EMAIL.sub(lambda m: r.placeholder("email", m.group(0)), path)
    if r._pattern is not None:
        out = r._pattern.sub(lambda m: r._learned.get(m.group(1), m.group(1)), out)
    return _SLUG.sub(_slug_words, out)


def _redact_body(r: Redactor, fields: dict[str, Any]) -> dict[str, Any]:
    if "json" in fields:
        return {"json": r.redact(fields["json"])}
    if "text" in fields:
        return {"text": r.text(fields["text"])}
    if "base64" in fields and not r.keep_content:
        # A downloaded file is content too: its length stays, its bytes do not.
        size = len(base64.b64decode(fields["base64"]))
        return {"base64": base64.b64encode(bytes(size)).decode("ascii")}
    return dict(fields)


class ExchangeWriter:
    """`--write-responses DIR`: each exchange as `DIR/exchanges/NNNN.json` when it is
    recorded. An exchange that would hold a secret is replaced by a note saying so."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.recorder: Recorder | None = None
        self.written = 0
        (directory / bundle.EXCHANGES_DIR).mkdir(parents=True, exist_ok=True)

    def __call__(self, doc: dict[str, Any]) -> None:
        text = bundle.dumps(doc)
        leaks = self.recorder.leaks(text) if self.recorder is not None else []
        if leaks:
            text = bundle.dumps({"n": doc["n"], "withheld": "held a secret; not written"})
        atomic_write_text(self.directory / bundle.exchange_name(int(doc["n"])), text)
        self.written += 1


def response_writer(directory: Path, *, keep_content: bool = False) -> Recorder:
    """A recorder that writes every exchange to `directory` and keeps none in memory."""
    writer = ExchangeWriter(directory)
    recorder = Recorder(keep_content=keep_content, sink=writer, keep=False)
    writer.recorder = recorder
    return recorder
