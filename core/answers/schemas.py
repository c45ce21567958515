"""Every structured answer labtui asks a model for, in one list: the records whose JSON schema a
server decodes with and whose rules the schema walk checks (tests/answers). The records live by
domain beside this module; the set-up answer (``setup_answer``) is asked for by ``labtui init``
alone and is not listed.
"""

from pydantic import BaseModel

from .code_answers import FunctionEdits
from .experiment_answers import FigureDescriptions, Plan, PlanEdit, Proposal, RunAnalysis
from .idea_answers import IdeaProposal, IdeaProposals, IdeaRecord, IdeaReflection, NoveltyStep
from .literature_answers import LiteratureStep
from .review_answers import ReviewForm, ReviewReflection
from .writeup_answers import (
    CitationProposal,
    CitationSelection,
    PaperClosing,
    PaperFrame,
    RelatedWork,
    RunReading,
    SectionText,
    TitleAbstract,
)

RECORDS: tuple[type[BaseModel], ...] = (
    ReviewForm,
    ReviewReflection,
    IdeaRecord,
    IdeaProposal,
    IdeaProposals,
    IdeaReflection,
    NoveltyStep,
    LiteratureStep,
    Plan,
    PlanEdit,
    RunAnalysis,
    Proposal,
    FunctionEdits,
    FigureDescriptions,
    CitationProposal,
    CitationSelection,
    SectionText,
    TitleAbstract,
    PaperFrame,
    RunReading,
    PaperClosing,
    RelatedWork,
)
