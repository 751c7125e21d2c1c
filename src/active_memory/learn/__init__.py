"""Learning that runs by itself: the session-end hook queues a finished harness session, and
one worker reviews it on the session's own harness lane (``hooks install --learn``)."""
