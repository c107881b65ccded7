"""`python -m pplx_export ...` = `pplx-export ...` (what `schedule` falls back to when the
console script is not next to the interpreter)."""

from pplx_export.cli.export import main

if __name__ == "__main__":
    main()
