"""A plugin whose import never returns (it waits for a device that never answers): discovery
must report it as unavailable after its time limit, not hang ``fw.devices()``."""

import threading

threading.Event().wait()
