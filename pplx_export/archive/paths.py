"""Thread directory naming (protocol §6.1, §6.11), hardened against hostile names.

Every name that reaches the file system comes from the API (titles, usernames, filenames),
so each rule below makes one path component that cannot climb out of the archive: no
separators, no `..`, no control characters, no leading dot (hidden or relative), no
Windows-illegal characters or reserved device names, and at most 255 bytes of UTF-8.
`thread_dir` checks the final result stays inside the root anyway.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from collections.abc import Container, Iterator
from datetime import UTC, datetime
from pathlib import Path

from pplx_export.errors import ArchiveError
from pplx_export.util.atomic import TEMP_PREFIX

log = logging.getLogger(__name__)

MAX_COMPONENT_BYTES = 255
# safe_stem leaves room for the suffixes the asset rules add (`_v12`, `_⟨uuid8⟩`, `.diff.md`).
MAX_STEM_BYTES = 200
# The archive's bookkeeping directory: the state store, the search database, the listings,
# logs and the lock (store/).
INDEX_DIR = "index"
# Top-level names the tool itself owns: an account folder must never land on them.
RESERVED_TOP = frozenset({INDEX_DIR, "relations", "spaces"})
# Prefix of a directory that a finished merge is deleting (see migrate.py).
TRASH_PREFIX = ".pplx-trash-"

_FOLDER_BAD = re.compile(r'[\\/:*?"<>|\x00-\x1f\x7f]+')
# Word characters are kept, the CJK ideographs U+4E00-U+9FFF among them: `\w` matches every
# one already, and naming the range as well cost ~3 ms of compiling at every start (a test
# holds the two spellings equal).
_SLUG_BAD = re.compile(r"[^\w-]+")
_STEM_BAD = re.compile(r"[^\w.-]+")
_UUID_BAD = re.compile(r"[^0-9A-Za-z-]")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# Windows reserves these device names whatever follows the first dot (`CON.pdf`, `aux.tar.gz`),
# with spaces before the dot too (`nul .txt`); COM and LPT take the superscript digits ¹²³ as
# well as 0-9 (`COM¹.pdf`), and the console has CONIN$ and CONOUT$.
_WIN_RESERVED = re.compile(r"(?:con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$) *", re.I)
# What counts as a file extension worth keeping when a long name is cut.
_EXT = re.compile(r"\.[0-9A-Za-z]{1,16}$")


def cap_bytes(text: str, limit: int = MAX_COMPONENT_BYTES) -> str:
    """Cut `text` to at most `limit` UTF-8 bytes without splitting a character."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    return raw[:limit].decode("utf-8", errors="ignore")


def _harden(name: str, fallback: str, limit: int) -> str:
    # Leading dots would make hidden files or `.`/`..`; trailing dots and spaces are
    # silently dropped by Windows, which would merge distinct names.
    name = cap_bytes(name.lstrip(". "), limit).rstrip(". ")
    if not name:
        return fallback
    head, dot, rest = name.partition(".")
    if _WIN_RESERVED.fullmatch(head):
        name = cap_bytes(f"{head}_{dot}{rest}", limit)
    return name


def safe_folder(name: str | None) -> str:
    """§6.1 `safe_folder`, plus: control characters, leading dots, byte cap, reserved names."""
    out = _FOLDER_BAD.sub("_", name or "").strip()
    out = _harden(out, "unknown", MAX_COMPONENT_BYTES)
    if out.lower() in RESERVED_TOP:
        out += "_"
    return out


def slugify(title: str | None) -> str:
    """§6.1: runs of non-word characters -> `-`, cut to 40 characters, strip `-`."""
    slug = _SLUG_BAD.sub("-", title or "")[:40].strip("-")
    return slug or "untitled"


def safe_stem(name: str | None, limit: int = MAX_STEM_BYTES) -> str:
    """§6.11 `safe_stem`, plus: no leading dots (so never `.`/`..`), byte cap."""
    out = _STEM_BAD.sub("_", name or "")
    return _harden(out, "file", limit)


def safe_file_name(name: str | None, limit: int = MAX_COMPONENT_BYTES - 5) -> str:
    """`safe_stem` for a whole file name: a name cut to `limit` bytes keeps its extension.

    The default leaves room for `_unique_name`'s `_<uuid8>` within the 255-byte component.
    """
    cleaned = _STEM_BAD.sub("_", name or "")
    if len(cleaned.encode("utf-8")) <= limit:
        return _harden(cleaned, "file", limit)
    match = _EXT.search(cleaned)
    ext = match.group(0) if match and match.start() > 0 else ""
    return _harden(cleaned[: len(cleaned) - len(ext)], "file", limit - len(ext)) + ext


def uuid8(web_uuid: str) -> str:
    """First 8 characters of the web UUID, restricted to UUID characters."""
    return _UUID_BAD.sub("_", (web_uuid or "")[:8]) or "nouuid"


def date_part(last_updated: str | None, *, today: datetime | None = None) -> str:
    """First 10 characters of lastUpdated; the current UTC date if missing or malformed."""
    head = (last_updated or "")[:10]
    if _DATE.fullmatch(head):
        return head
    return (today or datetime.now(UTC)).strftime("%Y-%m-%d")


def thread_dir_name(last_updated: str | None, title: str | None, web_uuid: str) -> str:
    return f"{date_part(last_updated)}_{slugify(title)}_{uuid8(web_uuid)}"


def _plainly_inside(root: str, path: str) -> bool:
    """True when `path` is `root` plus existing, ordinary name components none of which is a
    symlink: it then resolves inside `root` whatever `root` resolves to. A few lstat calls
    instead of resolving both paths (re-render checks every directory it writes)."""
    head, rest = root.rstrip(os.sep), path
    if not head or not rest.startswith(head + os.sep):
        return False
    current = head
    for part in rest[len(head) + 1 :].split(os.sep):
        if part in ("", ".", ".."):
            return False
        current += os.sep + part
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return False
        except OSError:
            return False
    return True


def ensure_inside(root: Path, path: Path) -> Path:
    """Raise ArchiveError unless `path` resolves to a location strictly inside `root`."""
    if _plainly_inside(os.fspath(root), os.fspath(path)):
        return path
    real_root = Path(root).resolve()
    real = Path(path).resolve()
    if real == real_root or not real.is_relative_to(real_root):
        raise ArchiveError(f"refusing to write outside the archive: {path}")
    return path


def thread_dir(
    root: Path,
    account_folder: str,
    mode: str,
    last_updated: str | None,
    title: str | None,
    web_uuid: str,
) -> Path:
    """`⟨root⟩/⟨safe account⟩/⟨mode⟩/⟨date⟩_⟨slug⟩_⟨uuid8⟩`, verified to stay inside root."""
    path = (
        Path(root)
        / safe_folder(account_folder)
        / safe_folder(mode)
        / thread_dir_name(last_updated, title, web_uuid)
    )
    return ensure_inside(root, path)


def is_thread_dir_name(name: str) -> bool:
    return not name.startswith(".") and not name.startswith(TEMP_PREFIX)


# (`⟨account⟩/⟨mode⟩/⟨dir⟩`, its path, reached through a symlink at any of the three levels)
Candidate = tuple[str, str, bool]


def _names(path: str) -> tuple[list[str], set[str]]:
    """The sorted names of the directories in `path` (hidden ones left out) and which of
    them are symlinks: names only, as a directory of 50,000 threads would otherwise hold a
    DirEntry (with its path) per thread."""
    names: list[str] = []
    links: set[str] = set()
    try:
        with os.scandir(path) as it:
            for e in it:
                if e.is_dir() and not e.name.startswith("."):
                    names.append(e.name)
                    if e.is_symlink():
                        links.add(e.name)
    except (FileNotFoundError, NotADirectoryError):
        pass
    names.sort()
    return names, links


def walk_thread_dirs(root: Path) -> Iterator[Candidate]:
    """Every directory that may hold a thread (`⟨account⟩/⟨mode⟩/⟨dir⟩`, as named by
    `is_thread_dir_name`), in order of (account, mode, dir), holding the names of one
    directory at a time. Whether it holds a thread is the caller's question
    (`has_thread_files`, or a record of it)."""
    top = str(root)
    accounts, linked_accounts = _names(top)
    for account in accounts:
        if account in RESERVED_TOP:
            continue
        account_path = os.path.join(top, account)
        modes, linked_modes = _names(account_path)
        for mode in modes:
            mode_path = os.path.join(account_path, mode)
            above = account in linked_accounts or mode in linked_modes
            names, links = _names(mode_path)
            for name in names:
                if is_thread_dir_name(name):
                    rel = f"{account}/{mode}/{name}"
                    yield rel, f"{mode_path}/{name}", above or name in links


def has_thread_files(path: str) -> bool:
    """Does the directory hold a thread.json or a raw_entries.json?"""
    return os.path.isfile(path + "/thread.json") or os.path.isfile(path + "/raw_entries.json")


def iter_thread_rels(
    root: Path, *, symlinked: set[str] | None = None, known: Container[str] = ()
) -> list[str]:
    """`⟨account⟩/⟨mode⟩/⟨dir⟩` of every directory with a thread.json or raw_entries.json.

    os.scandir and plain strings, not pathlib: this runs over every directory on each
    (no-op) re-render, where it is most of the cost. With `symlinked`, the directories
    reached through a symlink (at any of the three levels) are added to it: the others are
    plainly inside `root` (the listing already knows, at no cost), so writers can skip
    `ensure_inside`'s checks for them. Directories in `known` (rendered before) are listed
    without looking for those files: a thread directory that lost them is then reported by
    whoever reads it, not silently passed over.
    """
    found: list[str] = []
    for rel, path, linked in walk_thread_dirs(root):
        if rel in known or has_thread_files(path):
            found.append(rel)
            if symlinked is not None and linked:
                symlinked.add(rel)
    return found


def iter_thread_dirs(root: Path) -> list[Path]:
    """Every thread directory under root, sorted (see `iter_thread_rels`)."""
    return [Path(root) / rel for rel in iter_thread_rels(root)]


def read_web_uuid(directory: Path) -> str | None:
    """The `web_uuid` recorded in a directory's thread.json, or None if unreadable."""
    try:
        doc = json.loads((directory / "thread.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = doc.get("web_uuid") if isinstance(doc, dict) else None
    return value if isinstance(value, str) else None


def find_thread_dirs(root: Path, web_uuid: str, candidates: list[Path] | None = None) -> list[Path]:
    """Directories `*/*/*_⟨uuid8⟩` whose thread.json has exactly this web_uuid (§6.1).

    The suffix alone is never trusted: two threads can share a uuid8. `candidates` are the
    directories so named, when the caller listed them already (`archive/scan.ThreadDirs`);
    otherwise the archive is globbed.
    """
    root = Path(root)
    out: list[Path] = []
    if candidates is None:
        candidates = sorted(root.glob(f"*/*/*_{uuid8(web_uuid)}"))
    for d in candidates:
        parts = d.relative_to(root).parts
        if parts[0] in RESERVED_TOP or any(p.startswith(".") for p in parts):
            continue
        if d.is_dir() and read_web_uuid(d) == web_uuid:
            out.append(d)
    return out
