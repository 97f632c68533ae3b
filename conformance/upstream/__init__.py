"""From recorded divergences to upstream reports: root causes grouped into issues with
standalone scripts (``issues``, the ``conformance upstream`` command), their texts
(``upstream_issue``), the scripts' source (``upstream_script``), the causes' titles
(``causes``) and the releases a divergence shows in (``bisect``, ``conformance bisect``).
"""
