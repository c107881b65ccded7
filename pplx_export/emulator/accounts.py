"""The emulated site's signed-in accounts: stable user ids and a browser-like cookie jar.

A browser signed in to several Perplexity accounts holds one `__Secure-pplx.session.<uid>`
cookie per account next to the active `__Secure-next-auth.session-token` (protocol §1.3).
`account_jar` builds that jar for the emulator's accounts, so `init` can be run against it
from a cookie file exactly as it runs against a real browser's jar.
"""

from __future__ import annotations

import uuid as uuidlib

from pplx_export.emulator.app import SESSION_COOKIE, EmulatorConfig

ACCOUNT_PREFIX = "__Secure-pplx.session."


def user_id(email: str) -> str:
    """The id the session probe reports for `email` (stable across runs)."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"emulator-user:{email}"))


def account_jar(config: EmulatorConfig) -> dict[str, str]:
    """The main account active, plus one per-account token cookie for every account."""
    jar = {
        SESSION_COOKIE: config.session_token,
        f"{ACCOUNT_PREFIX}{user_id(config.email)}": config.session_token,
    }
    for token, (email, _name) in config.extra_accounts.items():
        jar[f"{ACCOUNT_PREFIX}{user_id(email)}"] = token
    return jar
