"""`python -m pplx_export`: the `pplx-export` command, without the console script."""

from pplx_export.cli.export import main

if __name__ == "__main__":
    main(prog_name="pplx-export")
