"""Registers the conformance plugin for ``pytest conformance``."""

from conformance import pytensor_env

pytensor_env.configure()  # before anything imports PyTensor

from conformance.plugin import *  # noqa: E402, F403  (pytest finds the hooks in this namespace)
