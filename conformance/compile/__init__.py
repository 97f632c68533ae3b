"""How PyTensor compiles for the harness: its settings in conformance processes
(``pytensor_env``), faster C compiles (``fastcompile``) and their counts (``compilestats``),
inner graphs compiled as their outer graph (``innergraphs``), rewritten graphs kept on disk
(``rewritestore``) and graphs rebuilt in a wider float dtype (``widened``).

This file imports nothing: ``conformance/conftest.py`` imports ``pytensor_env`` and applies it
before anything imports PyTensor.
"""
