"""Registers the conformance plugin for ``pytest conformance``."""

from conformance.compile import pytensor_env

pytensor_env.configure()  # before anything imports PyTensor

from conformance.session.plugin import *  # noqa: E402, F403  (pytest finds the hooks in this namespace)
