"""How every public call of :class:`~snapshotter.Snapshotter` runs: in order,
under its lock (and the store's, for a call that changes anything), with typed
errors, and, in ``on_error="warn"`` mode, never raising.

The facade's methods are thin: each checks its arguments and hands the work
to the module that owns it; this wrapper is what they all share.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, Protocol, TypeVar, cast

from snapshotter.engine.session.engine import Engine
from snapshotter.facade.background import Background
from snapshotter.options import Options

log = logging.getLogger("snapshotter")


class Facade(Protocol):
    """What the wrapper needs of the object whose methods it wraps."""

    _background: Background
    _lock: threading.RLock
    _engine: Engine | None
    _options: Options

    def _engine_ok(self) -> Engine: ...

    def _after_change(self) -> None: ...


_Method = TypeVar("_Method", bound=Callable[..., Any])


def public(failure: object = None, mutates: bool = False, maintain: bool = True) -> Callable[[_Method], _Method]:
    """Run a public method under the instance lock (and the store lock if it
    ``mutates``, applying retention afterwards unless ``maintain`` is False, and
    asking for a background push with ``auto_push``), with typed errors; in
    "warn" mode a failure is logged and ``failure`` returned instead, and the
    workspace is left as it was."""

    def wrap(method: _Method) -> _Method:
        @functools.wraps(method)
        def run(self: Facade, *args: Any, **kwargs: Any) -> Any:
            self._background.wait()  # calls stay in the order they were made
            try:
                with self._lock:
                    engine = self._engine_ok()
                    with engine.errors(), engine.lock if mutates else nullcontext():
                        result = method(self, *args, **kwargs)
                        if mutates and maintain and self._engine is not None:
                            from snapshotter.facade import maintenance  # a reading call loads no upkeep

                            maintenance.maintain(self._engine, self._options.retention)
                    if mutates and self._engine is not None:
                        self._after_change()  # a background push, with auto_push: never in the call's way
                    return result
            except Exception as exc:
                if self._options.on_error == "raise":
                    raise
                log.warning("snapshotter: %s failed: %s", method.__name__, exc)
                log.debug("snapshotter: %s failure details", method.__name__, exc_info=True)
                return failure

        return cast(_Method, run)

    return wrap
