"""Library mutations for tests and demos (`POST /__emulator/mutate`, `RunningEmulator.mutate`)."""

from __future__ import annotations

from pplx_export.emulator.app import LISTING_MODES, Emulator
from pplx_export.emulator.http import JSON
from pplx_export.emulator.library import DELETED, EXPIRED, OK
from pplx_export.emulator.routes import upkeep
from pplx_export.util.lenient import as_str


def mutate(app: Emulator, payload: JSON) -> tuple[int, JSON]:
    handled = upkeep.mutate(app, payload)  # fail_thread, own, url_ttl, advance_clock
    if handled is not None:
        return handled
    if "listing" in payload:
        # Flip which library listings answer, mid-library (the migration tests).
        value = as_str(payload["listing"])
        if value not in LISTING_MODES:
            return 400, {"error_code": "INVALID_REQUEST", "message": "|".join(LISTING_MODES)}
        app.listing = value
        return 200, {"status": "success", "action": "listing", "listing": value}
    library = app.library
    try:
        if "touch" in payload:
            record = library.touch(as_str(payload["touch"]), app.new_id())
            action = "touch"
        elif "shrink" in payload:
            keep = payload.get("keep", 1)
            if not isinstance(keep, int) or isinstance(keep, bool) or keep < 0:
                return 400, {"error_code": "INVALID_REQUEST", "message": "keep: a count"}
            rewrite = as_str(payload.get("rewrite"))
            record = library.shrink(as_str(payload["shrink"]), keep, rewrite)
            action = "shrink"
        elif "delete" in payload:
            listed = bool(payload.get("listed", False))
            record = library.set_state(as_str(payload["delete"]), DELETED, listed=listed)
            action = "delete"
        elif "expire" in payload:
            record = library.set_state(as_str(payload["expire"]), EXPIRED, listed=True)
            action = "expire"
        elif "forbid" in payload:
            record = library.forbid(as_str(payload["forbid"]))
            action = "forbid"
        elif "restore" in payload:
            record = library.set_state(as_str(payload["restore"]), OK, listed=True)
            action = "restore"
        else:
            return 400, {
                "error_code": "INVALID_REQUEST",
                "message": "touch|shrink|delete|expire|forbid|restore|listing",
            }
    except KeyError:
        return 404, {"error_code": "THREAD_NOT_FOUND"}
    return 200, {
        "status": "success",
        "action": action,
        "thread": record.uuid,
        "lastUpdated": record.last_updated,
        "n_entries": len(record.entries),
    }
