"""Does a lesson help? Its impact measured from recorded runs and the store's history.

``measure_impact(store, records)`` replays every run's recorded tool calls through recall's
matcher with the store as it was at the run's start and as it is now, and returns an
:class:`ImpactReport`: per lesson, the failures on its files and whether its card reached the
failing conversation first, repeat rates with and without it, and the lessons never delivered or
delivered often with no later failure. Recall never reads these figures. The package exports
every name :mod:`.measure` and :mod:`.models` list in their ``__all__``.
"""

from active_memory.impact import measure, models
from active_memory.impact.measure import *  # noqa: F403
from active_memory.impact.models import *  # noqa: F403

__all__ = [*measure.__all__, *models.__all__]
