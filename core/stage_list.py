"""The stages of a project, in order, and the model each one uses: the one list everything reads.

The pipeline runs them in this order, the journal replays them, the status bar shows them, and
``labtui.toml``'s ``[models]`` section has a key for each stage that has a model of its own.
Stages without one use the model of the stage whose work they share: planning runs is experiment
design, compile fixes are edits to the paper, and the literature review searches and judges
papers as the novelty check does.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StageInfo:
    name: str
    model_of: str = ""  # the stage whose [models] setting it uses; '' for its own
    needs_model: bool = True  # must a model be configured before the pipeline starts?

    @property
    def model_key(self) -> str:
        """The ``[models]`` key this stage's model is read from."""
        return self.model_of or self.name


STAGE_INFO: tuple[StageInfo, ...] = (
    StageInfo("literature", model_of="novelty"),
    StageInfo("ideas"),
    StageInfo("novelty"),
    StageInfo("plan", model_of="experiments"),
    StageInfo("experiments"),
    StageInfo("plots"),
    StageInfo("writeup"),
    # compile calls a model only to fix LaTeX errors, with the write-up's model
    StageInfo("compile", model_of="writeup", needs_model=False),
    StageInfo("review"),
)

STAGES: tuple[str, ...] = tuple(info.name for info in STAGE_INFO)
# Stages with a [models] key of their own.
MODEL_STAGES: tuple[str, ...] = tuple(info.name for info in STAGE_INFO if not info.model_of)
MODEL_BORROWED_FROM: dict[str, str] = {
    info.name: info.model_of for info in STAGE_INFO if info.model_of
}
# Stages that call an LLM and so need a model configured before the pipeline starts.
STAGE_MODEL_NEEDS: tuple[str, ...] = tuple(info.name for info in STAGE_INFO if info.needs_model)


def model_key(stage: str) -> str:
    """The ``[models]`` key of ``stage`` (a name that is no stage is its own key)."""
    return MODEL_BORROWED_FROM.get(stage, stage)
