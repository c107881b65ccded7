"""The small `pplx-ask` commands: `mark-read` (protocol §2.5) and `space-create` (§2.6)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pplx_export.commands.export.plan import parse_thread_ref
from pplx_export.context import RunOptions
from pplx_export.errors import SchemaError, UsageError
from pplx_export.site.api import PerplexityAPI
from pplx_export.site.ask import context_uuid_of
from pplx_export.site.session import open_session
from pplx_export.util.lenient import as_str

log = logging.getLogger("pplx_export.ask")


@dataclass
class MarkReadResult:
    thread_uuid: str
    context_uuid: str

    def to_json(self) -> dict[str, Any]:
        return {"thread_uuid": self.thread_uuid, "context_uuid": self.context_uuid}

    def line(self) -> str:
        return f"marked read: {self.thread_uuid}"


def run_mark_read(
    opts: RunOptions, ref: str, *, api: PerplexityAPI | None = None
) -> MarkReadResult:
    """`mark_viewed` by the thread's context UUID, read from the thread's first page."""
    uuid, _url = parse_thread_ref(ref)
    own = api is None
    api = api or open_session(opts)
    try:
        context_uuid = context_uuid_of(api.thread(uuid, max_pages=1))
        if not context_uuid:
            raise SchemaError("no entry carries a context_uuid", thread=uuid, path="$.entries")
        api.mark_viewed([context_uuid])
    finally:
        if own:
            api.close()
    return MarkReadResult(uuid, context_uuid)


@dataclass
class SpaceCreated:
    uuid: str
    slug: str
    title: str
    url: str

    def to_json(self) -> dict[str, Any]:
        return {"uuid": self.uuid, "slug": self.slug, "title": self.title, "url": self.url}

    def lines(self) -> list[str]:
        return [f"uuid  {self.uuid}", f"slug  {self.slug}", f"url   {self.url}"]


def run_space_create(
    opts: RunOptions, title: str, *, description: str = "", api: PerplexityAPI | None = None
) -> SpaceCreated:
    """Create a space (one attempt: a retry could create two)."""
    title = title.strip()
    if not title:
        raise UsageError("the space title is empty")
    own = api is None
    api = api or open_session(opts)
    try:
        data = api.create_collection(title, description=description)
    finally:
        if own:
            api.close()
    uuid, slug = as_str(data.get("uuid")), as_str(data.get("slug"))
    if not uuid or not slug:
        raise SchemaError("create_collection answered without uuid or slug", path=title)
    url = as_str(data.get("url")) or f"{opts.base_url}/spaces/{slug}"
    log.info("created the space %s", slug)
    return SpaceCreated(uuid, slug, as_str(data.get("title")) or title, url)
