"""Imported once by the DataLoader's fork server (``set_forkserver_preload``): the framework
and its plugin registry, so that each worker forked from the server starts with them loaded
instead of spending seconds importing them. Registering plugins opens no device and starts no
thread (runtimes are created on first use), so forking afterwards is safe.
"""

from __future__ import annotations

from .._src.plugins import host

host()
