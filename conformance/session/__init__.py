"""The pytest session behind ``pytest conformance``: the plugin (``plugin``), one Hypothesis
property per test (``runner``), xdist scheduling (``schedule``), Hypothesis profiles
(``profiles``), Ctrl-C handling (``interrupt``), the CPU a run ran on (``hardware``) and the
child processes that run code under test apart (``isolate``).

The top layer with the CLI: nothing below imports it, and neither the CLI nor the child
process imports the plugin (tests/test_layering.py).
"""
