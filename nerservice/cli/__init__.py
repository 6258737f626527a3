"""The ``nerservice`` command: a thin shell over the library (argument parsing, printing, exit codes)."""
