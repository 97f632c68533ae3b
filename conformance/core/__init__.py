"""Running and judging cases: the harness (``harness``), the one comparison (``oracle``), who
is to blame (``blame``), which records excuse a disagreement (``covering``), the converter
under test (``converters``), clean refusals (``support``), results files (``results``) and
the checks of what the command reads (``schema``, ``inputs``), repro bundles (``bundle``) and
op coverage (``coverage``).

Below the pytest session and the CLI, above the backends and the registry rows.
"""
