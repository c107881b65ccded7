"""`PerplexityAPI`: one account's typed view of the web API, over an `ApiClient`.

Thin by design: each method names an endpoint and delegates to the module of its area
(library, thread, collections, assets, ask). Errors are the typed `ApiError`s of the client.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pplx_export.errors import SchemaError
from pplx_export.site import ask, assets, library, spaces, thread
from pplx_export.site import constants as C
from pplx_export.site.client import ApiClient
from pplx_export.site.cookies import CookieSet
from pplx_export.util.closing import Closing

JSON = dict[str, Any]


class PerplexityAPI(Closing):
    def __init__(
        self, client: ApiClient, *, cookies: CookieSet | None = None, email: str = ""
    ) -> None:
        self.client = client
        self.cookies = cookies
        self.email = email  # the verified session email ("" until probed)

    def close(self) -> None:
        self.client.close()

    @property
    def requests_made(self) -> int:
        """Requests issued by every client of this process (the shared runtime's count)."""
        return self.client.runtime.stats.total

    # -- session --------------------------------------------------------------------------

    def session(self) -> JSON:
        """`GET /api/auth/session`: `{"user": {"email", "name", ...}}`, or `{}` when signed out."""
        data = self.client.get(C.SESSION_PATH, timeout=C.SESSION_TIMEOUT)
        return data if isinstance(data, dict) else {}

    # -- library --------------------------------------------------------------------------

    def iter_library(self, run: library.ListingRun | None = None) -> Iterator[JSON]:
        """Index rows, newest first; stop iterating whenever you have enough. `run` says
        which listings to try in which order, and records which one answered."""
        return library.iter_library(self.client, run)

    # -- threads --------------------------------------------------------------------------

    def thread(self, uuid: str, *, max_pages: int | None = None) -> JSON:
        """Plain thread response, all pages merged (`raw_entries.json`)."""
        return thread.fetch_thread(self.client, uuid, max_pages=max_pages)

    def thread_schematized(self, uuid: str, *, max_pages: int | None = None) -> JSON:
        """Schematized thread response, all pages merged (`raw_blocks.json`)."""
        return thread.fetch_thread(self.client, uuid, schematized=True, max_pages=max_pages)

    def mark_viewed(self, context_uuids: Sequence[str]) -> Any:
        body = {"context_uuids": list(context_uuids)}
        return self.client.post(
            C.MARK_VIEWED_PATH, body, params=C.STD_QUERY, timeout=C.META_TIMEOUT
        )

    # -- spaces ---------------------------------------------------------------------------

    def get_collection(self, slug: str) -> JSON:
        return spaces.get_collection(self.client, slug)

    def iter_collection_threads(self, slug: str) -> Iterator[JSON]:
        return spaces.iter_collection_threads(self.client, slug)

    def list_user_collections(self) -> list[JSON]:
        return spaces.list_user_collections(self.client)

    def create_collection(self, title: str, *, description: str = "") -> JSON:
        return spaces.create_collection(self.client, title, description=description)

    def batch_move_threads(self, context_uuids: Sequence[str], collection_uuid: str) -> Any:
        return spaces.batch_move_threads(self.client, context_uuids, collection_uuid)

    def move_to_space(self, context_uuid: str, collection_uuid: str) -> str:
        """Move one thread into a space the way the 2026 UI does; returns the endpoint used."""
        return spaces.move_to_space(self.client, context_uuid, collection_uuid)

    # -- assets ---------------------------------------------------------------------------

    def asset_data(self, asset_uuid: str) -> assets.AssetData:
        return assets.asset_data(self.client, asset_uuid)

    def download(self, url: str, dest_dir: Path, *, timeout: float | None = None) -> Path:
        return assets.download(self.client, url, dest_dir, timeout=timeout)

    # -- models, usage --------------------------------------------------------------------

    def models_config(self) -> JSON:
        data = self.client.get(C.MODELS_CONFIG_PATH, params=C.STD_QUERY, timeout=C.META_TIMEOUT)
        if not isinstance(data, dict):
            raise SchemaError("models config is not an object", path=C.MODELS_CONFIG_PATH)
        return data

    def credit_usage(self, context_uuid: str) -> JSON:
        """Usage of one thread, by **context** UUID (an entry UUID gets 403
        `thread_usage_forbidden` -> PermissionDenied)."""
        data = self.client.get(
            C.THREAD_USAGE_PATH,
            params=[("thread_id", context_uuid), *C.STD_QUERY],
            timeout=C.META_TIMEOUT,
        )
        if not isinstance(data, dict):
            raise SchemaError("credit usage is not an object", path=context_uuid)
        return data

    # -- ask ------------------------------------------------------------------------------

    def ask(self, body: JSON, *, timeout: float = C.ASK_TIMEOUT) -> Iterator[JSON]:
        """Stream the events of an ask (build `body` with `perplexity.ask.build_ask_body`)."""
        return ask.ask_events(self.client, body, timeout=timeout)
