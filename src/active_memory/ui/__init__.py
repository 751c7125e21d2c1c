"""The local lesson browser (``active-memory ui``): lessons by scope, a lesson's card, evidence,
revision diffs and ledger, the quarantine with approve and reject, and the runs.

Loopback only, one-time token then a session cookie, CSRF on every form, a strict CSP and every
lesson string escaped: see :mod:`.security` and :mod:`.app`.
"""

from active_memory.ui.server import UiServer
from active_memory.ui.views import UiData

__all__ = ["UiData", "UiServer"]
