"""A pytest plugin (``-p pretend_versions``) for self-tests: every record's ``versions`` bound
holds, and the registry counts as checked against onnxruntime 1.0 only, so a record that no
longer shows on the installed onnxruntime looks like a fix in an unchecked release."""

from conformance import versions

versions.CHECKED["onnxruntime"] = "1.0"
versions.holds = lambda requirement: True
