"""Memory init: learn lessons from every finished local run, in one resumable session.

The session folder holds the inventory, the exported specialist tasks and their responses, the
staged findings and the publication checkpoint (:mod:`.state`). :func:`.advance.advance` is the
one step every call makes: inventory on the first call, then import what was answered, export
what is next, and publish everything in one checked transaction once maintenance is complete.
"""

from active_memory.history_init.advance import Answer, InitOptions, advance
from active_memory.history_init.state import InitRefused

__all__ = ["Answer", "InitOptions", "InitRefused", "advance"]
