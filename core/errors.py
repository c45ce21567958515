"""The one exception type a researcher is meant to read: what went wrong, where, and the fix."""

from __future__ import annotations


class LabtuiError(Exception):
    """An error with a clear message and a fix. The CLI prints these without a traceback."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  fix: {self.hint}" if self.hint else self.message


class ConfigError(LabtuiError):
    """labtui.toml or the environment is wrong."""


class TemplateError(LabtuiError):
    """A template folder does not follow the contract."""


class BudgetExceeded(LabtuiError):
    """The hard budget cap was reached; the pipeline stops at the next checkpoint."""


class LLMError(LabtuiError):
    """A model call failed for good (after retries), or its output stayed invalid after re-asks."""


class UnusableAnswer(LLMError):
    """A structured answer stayed unusable after every re-ask. ``problem`` is what was wrong with
    the last one, so that a caller can say it in its own words (a review with no content)."""

    def __init__(
        self, message: str, hint: str, *, model: str, record: str, attempts: int, problem: str
    ) -> None:
        super().__init__(message, hint)
        self.model = model
        self.record = record
        self.attempts = attempts
        self.problem = problem


class StageFailed(LabtuiError):
    """A stage could not do its work; the project stays resumable at that stage."""


class Aborted(LabtuiError):
    """The researcher aborted at a checkpoint."""
