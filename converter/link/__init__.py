"""ONNX as a PyTensor backend: the linker (``linker``) and the modes (``mode``), laid out as
PyTensor lays out ``pytensor/link/<name>/linker.py`` and the entries of its ``compile/mode.py``."""
