# mypy: disable-error-code="valid-type"
# (the field types are built by functions: Prose(8, "…") is a type to pydantic, not to mypy)
"""The paper's answers as typed records: the citations a section needs and the papers chosen
for them (``core.writeup.citations``), a section's LaTeX and the title and abstract
(``core.writeup.sections``), each bounded in length."""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, create_model

from .checks import Flag, Prose, answer_error, must_be_list_of, needs_items, states
from .record import Record
from .variants import Filled, Is, Need, Variant, Variants

# -- citations (core.writeup.citations) -------------------------------------------------------------------


@states("type")
def _index(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int):
        raise answer_error("not_integer", f"must be a result's number (an integer), got {value!r}")
    return value


class CitationProposal(Record):
    model_config = ConfigDict(title="citation proposal")
    shape: ClassVar[str] = (
        '{"done": true|false, "where": <the section and sentence>, "query": <arXiv search>}'
    )

    variants: ClassVar[Variants] = Variants(
        (
            Variant((Is("done", True),)),
            Variant(
                (Is("done", False),),
                (
                    Need(
                        "where",
                        '"where" must name the section and sentence that needs a citation',
                        "the section and sentence that needs a citation",
                        min_words=2,
                    ),
                    Need(
                        "query",
                        '"query" must be a search query for arXiv',
                        "a search query for arXiv",
                    ),
                ),
            ),
        )
    )

    done: Flag
    where: str = Field("", description="unless done: the section and sentence needing a citation")
    query: str = Field("", description="unless done: a short arXiv search query")


class CitationSelection(Record):
    model_config = ConfigDict(title="citation selection")
    shape: ClassVar[str] = '{"chosen": [<result numbers>], "how": <where and how>} ([] for none)'
    variants: ClassVar[Variants] = Variants(
        (
            Variant((Filled("chosen", False),)),
            Variant(
                (Filled("chosen"),),
                (
                    Need(
                        "how",
                        '"how" must say where and how to cite the chosen papers',
                        "where and how to cite the chosen papers",
                        min_words=2,
                    ),
                ),
            ),
        )
    )

    # An empty choice is legitimate: none of the results may support the place.
    chosen: Annotated[
        list[Annotated[int, BeforeValidator(_index)]], BeforeValidator(must_be_list_of("numbers"))
    ]
    how: str = Field("", description="with papers chosen: where and how to cite them")


# -- a section of the paper (core.writeup.sections) -------------------------------------------------


# Qwen2.5-Coder-1.5B wrote its abstract as a copy of the whole prompt (the notebook's tables,
# "[...]" and all) until the 2,048-token cap cut the JSON off: a section's length is bounded.
TITLE_CHARS, ABSTRACT_CHARS, SECTION_CHARS = 200, 1600, 6000


def at_most_chars(limit: int) -> Any:
    """A text of at most ``limit`` characters, checked here and not in the schema."""

    @states(
        unstated=(
            "at most N characters: llama.cpp's converter nests one grammar rule per character "
            "of a maxLength, and maxLength 1,600 made its server fail to parse the grammar and "
            "die (measured with Qwen2.5-Coder-1.5B, llama-cpp-python 0.3.36)",
        )
    )
    def check(text: str) -> str:
        if len(text) > limit:
            raise answer_error(
                "too_long_text",
                f"is {len(text):,} characters long; at most {limit:,}: write it shorter, in "
                "your own words, without copying the prompt",
            )
        return text

    return check


class SectionText(Record):
    """One section's body in LaTeX; what it may hold (no preamble, traced numbers, known
    \\cite keys) is checked against the paper and the runs by core/writeup/section_text.py."""

    model_config = ConfigDict(title="section text")
    shape: ClassVar[str] = (
        '{"latex": <the section\'s text in LaTeX, without its \\section heading>}'
    )

    latex: Annotated[
        Prose(25, "the section's text in LaTeX, without its \\section heading", min_chars=120),
        AfterValidator(at_most_chars(SECTION_CHARS)),
    ]


class TitleAbstract(Record):
    model_config = ConfigDict(title="title and abstract")
    shape: ClassVar[str] = '{"title": <the paper\'s title>, "abstract": <the abstract in LaTeX>}'

    title: Annotated[
        Prose(3, "the paper's title, on one line"), AfterValidator(at_most_chars(TITLE_CHARS))
    ]
    abstract: Annotated[
        Prose(40, "the abstract in LaTeX: the problem, what was done, the main result"),
        AfterValidator(at_most_chars(ABSTRACT_CHARS)),
    ]


# -- the words around a paper's facts (core.writeup.slots) ------------------------------------------

# ``[paper] writer = "slots"``: code writes the facts (the table of runs, the setup, what each run
# changed) and a model only the words around them, a few sentences a field, in plain text that
# labtui escapes and places. Each sentence is checked before it is placed.
SLOT_CHARS = 800


def _slot(min_words: int, about: str) -> Any:
    return Annotated[Prose(min_words, about), AfterValidator(at_most_chars(SLOT_CHARS))]


class PaperFrame(Record):
    """The paper's title and the words of its introduction, background and method."""

    model_config = ConfigDict(title="paper frame")
    shape: ClassVar[str] = (
        '{"title": <the title>, "problem": <2-3 sentences>, "idea": <2-3 sentences>, '
        '"background": <2-3 sentences>}'
    )

    title: Annotated[
        Prose(3, "the paper's title, one line of plain text"),
        AfterValidator(at_most_chars(TITLE_CHARS)),
    ]
    problem: _slot(15, "the problem this work studies and why it matters, in plain text")
    idea: _slot(15, "the idea the runs test and how it changes the baseline, in plain text")
    background: _slot(
        15, "the concepts the idea builds on, for a reader new to them, in plain text"
    )


class RunReading(Record):
    """What one run's result means for the idea, beside the numbers code wrote."""

    model_config = ConfigDict(title="run reading")
    shape: ClassVar[str] = '{"reading": <1-2 sentences>}'

    reading: _slot(8, "what this run's result means for the idea, in plain text")


class PaperClosing(Record):
    """The limits of the study and its conclusion."""

    model_config = ConfigDict(title="paper closing")
    shape: ClassVar[str] = '{"limitations": <1-3 sentences>, "conclusion": <2-3 sentences>}'

    limitations: _slot(10, "what these runs cannot tell, in plain text")
    conclusion: _slot(12, "what was found and what to try next, in plain text")


class RelatedSentence(Record):
    model_config = ConfigDict(title="related sentence")

    key: str = Field(description="the bibliography key of the paper")
    sentence: _slot(8, "how that paper relates to this work, in plain text")


class RelatedWork(Record):
    """One sentence for each of some papers of the bibliography; labtui adds the citation."""

    model_config = ConfigDict(title="related work")
    shape: ClassVar[str] = '{"sentences": [{"key": <a key>, "sentence": <one sentence>}, ...]}'

    sentences: Annotated[
        list[RelatedSentence],
        BeforeValidator(must_be_list_of("objects")),
        AfterValidator(needs_items(1, "a sentence about one paper")),
        Field(json_schema_extra={"minItems": 1}),
    ]


def related_answer(keys: tuple[str, ...]) -> type[RelatedWork]:
    """RelatedWork whose keys are the bibliography's (an enum in the schema, so a constrained
    server names only papers that exist), at most one sentence a paper."""
    if not keys:
        return RelatedWork
    sentence = create_model(
        "RelatedSentence",
        __base__=RelatedSentence,
        key=(Literal[keys], Field(description="the bibliography key of the paper")),
    )
    return create_model(
        "RelatedWork",
        __base__=RelatedWork,
        sentences=(
            Annotated[
                list[sentence],
                BeforeValidator(must_be_list_of("objects")),
                AfterValidator(needs_items(1, "a sentence about one paper")),
            ],
            Field(json_schema_extra={"minItems": 1, "maxItems": len(keys)}),
        ),
    )
