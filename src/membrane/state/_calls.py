"""Redis calls that end at their deadline whatever the link does, and what their failures mean.

A socket timeout bounds each read, not a call: a link that trickles a reply a few bytes at a
time keeps every read short and the call going for as long as the trickle lasts. So each call
runs on one of a few daemon threads (:class:`CallRunner`) and its caller waits for it until the
deadline, measured from the moment the call was asked for, and no longer. A call still running
then is abandoned: its thread finishes it, so redis-py either reads the whole reply or drops the
connection on the error that ends it, and a connection is never handed to another call with a
reply half read. The threads are bounded: at most ``threads`` calls are in flight, abandoned
ones included, and a call that finds none free before its deadline is not run.

Failures are sorted by whose problem they are (:func:`classify`): a full connection pool is
back-pressure (``"busy"``), a reply saying the key holds another type is that key's
(``"key"``), and everything else is the node's (``"node"``).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, TypeVar

__all__ = [
    "CallAbandoned",
    "CallBusy",
    "CallRunner",
    "FailureKind",
    "classify",
    "pool_is_full",
    "run_patiently",
]

T = TypeVar("T")

#: Whose problem a failed call is: the pool's (wait less next time), the key's, or the node's.
FailureKind = Literal["busy", "key", "node"]

# How long a runner thread with nothing to do waits for a call before it ends.
_IDLE_SECONDS = 10.0
# The longest pause between two tries for a connection of a full (non-blocking) pool.
_POOL_PAUSE_MAX = 0.02


class CallBusy(Exception):
    """No runner thread or pooled connection came free before the call's deadline."""


class CallAbandoned(Exception):
    """The call was still running at its deadline; its thread finishes it unobserved."""


class _Call:
    __slots__ = ("abandoned", "done", "error", "fn", "result")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self.abandoned = False


class _Worker:
    __slots__ = ("calls",)

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()


class CallRunner:
    """Runs blocking calls on at most ``threads`` daemon threads, each bounded by a deadline.

    Threads are started when calls need them and end after 10 s without a call, so an idle
    store holds none.
    """

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._reset()

    def _reset(self) -> None:
        # A forked child has none of its parent's threads: it starts afresh (redis-py's pools
        # do the same for their connections).
        self._pid = os.getpid()
        self._slots = threading.BoundedSemaphore(self.threads)
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []

    def run(self, fn: Callable[[], T], deadline: float) -> T:
        """``fn()`` if it ends before ``deadline`` (a ``time.monotonic()`` time).

        Raises :class:`CallBusy` when no thread came free in time (``fn`` never ran) and
        :class:`CallAbandoned` when ``fn`` was still running; ``fn``'s own exception otherwise.
        """
        if self._pid != os.getpid():
            self._reset()
        if not self._slots.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
            raise CallBusy(f"all {self.threads} threads for store calls are busy")
        call = _Call(fn)
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            worker = _Worker()
            worker.calls.put(call)
            thread = threading.Thread(
                target=self._work, args=(worker,), name="membrane-store-call", daemon=True
            )
            try:
                thread.start()
            except RuntimeError as exc:  # the process may start no more threads
                self._slots.release()
                raise CallBusy(f"cannot start a thread for a store call: {exc}") from exc
        else:
            worker.calls.put(call)
        if not call.done.wait(max(deadline - time.monotonic(), 0.0)):
            call.abandoned = True  # a call not yet started is skipped
            raise CallAbandoned("the call was still running at its deadline")
        if call.error is not None:
            raise call.error
        result: T = call.result
        return result

    def _work(self, worker: _Worker) -> None:
        while True:
            try:
                call = worker.calls.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if worker in self._idle:
                        self._idle.remove(worker)
                        return
                continue  # a caller took this worker just now: its call is on the way
            try:
                if not call.abandoned:
                    call.result = call.fn()
            except BaseException as exc:  # handed to the caller, who decides
                call.error = exc
            finally:
                self._slots.release()
                call.done.set()
            with self._lock:
                self._idle.append(worker)


def _max_connections_error() -> type[BaseException]:
    import redis.exceptions

    error: type[BaseException] = redis.exceptions.MaxConnectionsError
    return error


def _no_connection_available(exc: BaseException, pool: object) -> bool:
    """A blocking pool's wait for a connection ran out (redis-py raises a ConnectionError)."""
    import redis

    return isinstance(pool, redis.BlockingConnectionPool) and "No connection available" in str(exc)


def run_patiently(fn: Callable[[], T], deadline: float, pool: object = None) -> T:
    """``fn()``, tried again while the client's pool is full, until ``deadline``.

    A full non-blocking pool refuses at once (redis-py's ``MaxConnectionsError``) and a blocking
    one after its own timeout; both mean other calls hold every connection, so the call waits
    for one (short pauses, up to 20 ms) within its deadline and raises :class:`CallBusy` then.
    """
    full = _max_connections_error()
    pause = 0.001
    while True:
        try:
            return fn()
        except full as exc:
            if time.monotonic() + pause >= deadline:
                raise CallBusy(f"the connection pool stayed full: {exc}") from exc
        except Exception as exc:
            if _no_connection_available(exc, pool):
                raise CallBusy(f"the connection pool stayed full: {exc}") from exc
            raise
        time.sleep(pause)
        pause = min(pause * 2, _POOL_PAUSE_MAX)


def pool_is_full(pool: object) -> bool:
    """Whether every connection of a blocking ``pool`` is checked out (so a call abandoned at
    its deadline may have been waiting for one, not for the server)."""
    import redis

    if not isinstance(pool, redis.BlockingConnectionPool):
        return False  # a non-blocking pool never makes a caller wait
    return bool(pool.pool.empty())


def classify(exc: BaseException) -> FailureKind:
    """Whose problem the failure of a call on one key is."""
    import redis.exceptions

    if isinstance(exc, CallBusy):
        return "busy"
    if isinstance(exc, redis.exceptions.ResponseError) and str(exc).startswith("WRONGTYPE"):
        return "key"
    return "node"
