"""The sections of ``labtui.toml``, one pydantic model each, with its defaults, the choices and
ranges each field allows, and a docstring per field (what ``labtui.toml`` means by it). They live
by domain: ``project_sections`` (project, models, llm, budget, limits, autonomy, notify),
``experiment_sections`` (experiment, climb, tree, results), ``machine_sections`` (sandbox,
cluster) and ``research_sections`` (paper, ideas, literature, review), built from
``section_types``. This module names them all, for core/settings/config.py and every caller.

Values are checked strictly (a number is never read from a string, nor a string from a number)
and unknown fields are refused; core/settings/config.py turns every failure into an error that names the
file, the field and the fix.
"""

from .experiment_sections import (
    ClimbSection,
    ExperimentSection,
    ResultsSection,
    SearchSection,
    TreeSection,
)
from .machine_sections import ClusterSection, SandboxSection
from .project_sections import (
    NOTIFY_EVENTS,
    AutonomySection,
    BudgetSection,
    LimitsSection,
    LLMSection,
    ModelsSection,
    NotifyEvent,
    NotifySection,
    ProjectSection,
)
from .research_sections import IdeasSection, LiteratureSection, PaperSection, ReviewSection
from .section_types import Section

__all__ = [
    "NOTIFY_EVENTS",
    "AutonomySection",
    "BudgetSection",
    "ClimbSection",
    "ClusterSection",
    "ExperimentSection",
    "IdeasSection",
    "LLMSection",
    "LimitsSection",
    "LiteratureSection",
    "ModelsSection",
    "NotifyEvent",
    "NotifySection",
    "PaperSection",
    "ProjectSection",
    "ResultsSection",
    "ReviewSection",
    "SandboxSection",
    "SearchSection",
    "Section",
    "TreeSection",
]
