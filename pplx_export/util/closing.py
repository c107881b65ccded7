"""`with obj:` for the objects that hold connections: `obj.close()` at the block's end."""

from __future__ import annotations

from typing import Self


class Closing:
    """A context manager that is itself and closes itself on exit (the subclass's `close`)."""

    def close(self) -> None:
        """Release what the object holds (the subclass says what)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        """The object itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the object, whatever ended the block."""
        self.close()
