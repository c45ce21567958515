"""How a pipeline's end is said to the researcher and to the shell: the error dialog's words for
a crash, the line left on the terminal after a detach, and the process's exit status."""

from __future__ import annotations

from labtui.core.errors import LabtuiError

from .engine_bridge import RESUME_HINT
from .exit_status import EXIT_FAILED, EXIT_OK, finished_exit
from .session import Session

# a finished pipeline: finished_exit (its paper done or incomplete)
OUTCOME_EXIT_CODES = {"stopped": EXIT_OK, "failed": EXIT_FAILED}


def describe_crash(error: BaseException | None) -> tuple[str, str, str]:
    """Title, message and hint of the error dialog for a pipeline that raised."""
    if isinstance(error, LabtuiError):
        return "The pipeline stopped", error.message, error.hint or RESUME_HINT
    name = type(error).__name__ if error is not None else "Unknown error"
    return "The pipeline crashed", f"{name}: {error}", RESUME_HINT


def detached_message(session: Session) -> str:
    pid = getattr(session, "engine_pid", 0)
    return (
        f"labtui: detached; the run goes on in its engine (pid {pid}). "
        f"Follow it again: labtui attach {session.project_root}"
    )


def pipeline_exit_code(*, crashed: bool, outcome: str | None, open_problems: list[str]) -> int:
    """The process's exit status (``labtui run --help`` lists them): a run that finished with
    its paper incomplete says so (EXIT_INCOMPLETE), as ``--headless`` does."""
    if crashed:
        return EXIT_FAILED
    if outcome == "finished":
        return finished_exit(open_problems)
    return OUTCOME_EXIT_CODES.get(outcome or "stopped", EXIT_FAILED)
