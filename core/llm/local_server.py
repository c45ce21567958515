"""labtui's own model made ready before each call: its server started when it is not running
(it stops after [models] local_idle_min, or died mid-answer) and marked used, so that it is not
stopped while labtui still works with it.

A server that dies mid-answer fails the request with a dropped connection, which the client's
retry policy retries: the retry finds the server down and starts it again here, once per call; a
second death in the same call is an error that names the server's log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..errors import LLMError
from ..local_model.manage import mark_used, serve
from ..settings.config import ModelSpec

_announced: set[str] = set()  # the servers this process said it uses: said once


@dataclass
class Restarts:
    """How many times one call started the server again (at most ``allowed``)."""

    allowed: int = 1
    done: int = 0


def ready_spec(
    spec: ModelSpec, notice: Callable[[str], None], restarts: Restarts | None = None
) -> ModelSpec:
    """``spec`` with the address its server answers at now; other models as they are."""
    if spec.local is None:
        return spec
    served = serve(spec.local, notice=notice)
    if served.started_now and spec.api_base:  # it ran before: this is a restart
        restarts = restarts or Restarts()
        if restarts.done >= restarts.allowed:
            raise LLMError(
                f"labtui's local model server stopped again while answering (log: {served.log})",
                "see the log's last lines; `labtui model status` shows the server, "
                "`labtui model stop` then `labtui model serve` starts it afresh",
            )
        restarts.done += 1
        notice(f"the local model's server had stopped: started again at {served.url}")
    if served.url not in _announced:
        _announced.add(served.url)
        notice(
            f"using the local model {served.title} on {served.address}; "
            "set LABTUI_MODEL to use another"
        )
    mark_used(spec.local)
    return replace(spec, api_base=served.url) if served.url != spec.api_base else spec


def done_with(spec: ModelSpec) -> None:
    """A call to ``spec`` ended: its idle time counts from now."""
    if spec.local is not None:
        mark_used(spec.local)
