"""Shared test set-up.

The anthropic and openai SDKs are built on httpx2; aliasing it before anything imports httpx
lets respx see their traffic. No test reaches the network.
"""

from __future__ import annotations

import httpx2

httpx2.alias_httpx()
