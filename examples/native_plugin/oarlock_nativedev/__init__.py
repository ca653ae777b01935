"""oarlock-nativedev: an Oarlock device written in C (nativedev.c against oarlock_device.h).

The entry point names ``plugin``: the library beside this file, loaded by adapter_api.native
when the core registers plugins (on first device use), not at import.
"""

from adapter_api.native import NativePlugin

plugin = NativePlugin.beside(__file__, "_nativedev")
