import asyncio
import threading

from active_memory.cancel import CancelToken


async def test_wait_returns_when_another_thread_cancels() -> None:
    token = CancelToken()
    waiter = asyncio.ensure_future(token.wait())
    await asyncio.sleep(0)
    assert not waiter.done()
    threading.Timer(0.01, token.cancel).start()
    await asyncio.wait_for(waiter, timeout=2)
    assert token.cancelled
    assert token.is_set()


async def test_wait_on_a_cancelled_token_returns_at_once() -> None:
    token = CancelToken()
    token.cancel()
    await asyncio.wait_for(token.wait(), timeout=1)


async def test_abandoned_waiters_are_forgotten() -> None:
    token = CancelToken()
    waiter = asyncio.ensure_future(token.wait())
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    assert token._waiters == []
    assert not token.cancelled
