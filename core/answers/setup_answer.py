# mypy: disable-error-code="valid-type"
# (the field types are built by functions: Prose(8, "…") is a type to pydantic, not to mypy)
"""How to run a researcher's repository, as a model reads it from the survey (``labtui init``,
``core.onboarding.setup_proposal``): a typed record whose values are checked there."""

from typing import Annotated, ClassVar

from pydantic import ConfigDict, Field

from .record import Record

RESULT_SOURCES = ("final_info", "json", "csv", "stdout", "tensorboard", "wandb")


class SetupAnswer(Record):
    """How to run a researcher's repository, as a model reads it from the survey. Only the shape
    is checked here: every value is checked against what the survey found (files, options,
    metrics) by core/onboarding/setup_proposal.py, one by one, so one bad value costs only itself."""

    model_config = ConfigDict(title="set-up")
    shape: ClassVar[str] = (
        '{"command": <one run, with {python} and {out_dir}>, "smoke_command": <or "">, '
        '"results_source": <final_info|json|csv|stdout|tensorboard|wandb>, "results_path": '
        '<or "">, "metrics": {<name>: "higher" or "lower"}, "edit": [<files>], "protect": '
        '[<files>], "paper_tex": <or "">, "paper_sections": [<titles>], "task": <the research, '
        'in two to five sentences>, "why": {<field>: <the fact it rests on>}}'
    )

    command: str = ""
    smoke_command: str = ""
    # The choices go into the schema (core.onboarding.setup_proposal checks them against the survey).
    results_source: str = Field("", json_schema_extra={"enum": list(RESULT_SOURCES)})
    results_path: str = ""
    metrics: dict[str, Annotated[str, Field(json_schema_extra={"enum": ["higher", "lower"]})]] = (
        Field(default_factory=dict)
    )
    edit: list[str] = Field(default_factory=list)
    protect: list[str] = Field(default_factory=list)
    paper_tex: str = ""
    paper_sections: list[str] = Field(default_factory=list)
    task: str = ""
    why: dict[str, str] = Field(default_factory=dict)
