"""A panel of scientist personas that discusses the task before ideas are proposed.

The mechanism follows the team discussion of Virtual Scientists (VirSci): a leader convenes a few
scientists with distinct expertise; in each turn every member speaks once, seeing the topic, the
leader's summaries of the earlier turns and what the members before it said in this turn; then
the leader summarises the turn. A later turn sees only the summaries, never earlier remarks, so
prompts stay bounded however many turns run. Finally the leader turns the discussion into ideas
with self-assessed scores, in the schema of the ideas stage.

Every model call speaks under its own role (a persona's name, or ``leader``), so the LLM layer's
own ``AgentChunk``/``AgentMessage`` events show the discussion in the dialogue pane turn by turn
as it streams; telling the same text again would show every remark twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..answers.idea_answers import IdeaProposals
from ..errors import ConfigError, StageFailed
from ..workspace.ideas import Idea, parse_idea_list

if TYPE_CHECKING:
    from ..llm.client import LLM
    from ..stage_context import StageContext

LEADER = "leader"  # the role of the leader's calls; no persona may take it
NAME_MAX_CHARS = 60  # a persona's name labels its messages in the dialogue pane
PERSONA_FIELDS = ("name", "expertise", "stance")
PERSONAS_SHAPE = '{"personas": [{"name": "...", "expertise": "...", "stance": "..."}]}'


@dataclass(frozen=True)
class Persona:
    name: str  # a short display name, e.g. "Dr. Ada (optimisation)"; unique in the panel
    expertise: str  # one sentence
    stance: str  # how this persona tends to argue (sceptic, theorist, engineer, ...)

    def card(self) -> str:
        """Who the persona is: the system prompt of each of its turns."""
        return (
            f"You are {self.name}, a scientist on a research panel.\n"
            f"Your expertise: {self.expertise}\n"
            f"How you argue: {self.stance}"
        )


@dataclass
class PanelResult:
    personas: list[Persona]
    summaries: list[str]  # the leader's summary after each turn, in order
    ideas: list[Idea]  # the leader's proposals, validated by core.workspace.ideas.parse_idea_list


@dataclass(frozen=True)
class Remark:
    speaker: str
    text: str


# -- validation ---------------------------------------------------------------------------------


def parse_personas(data: Any, count: int) -> list[Persona]:
    """{"personas": [...]} (or a bare list) -> exactly ``count`` personas with unique names.

    Every ValueError says what to change, because its message is what the model is re-asked with.
    """
    items = data.get("personas") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError(f"the reply must be {PERSONAS_SHAPE}")
    if len(items) != count:
        raise ValueError(f"the panel needs exactly {count} personas; the reply has {len(items)}")
    personas = [_parse_persona(item, f"personas[{i}]") for i, item in enumerate(items)]
    _check_unique_names(personas)
    return personas


def _parse_persona(item: Any, where: str) -> Persona:
    if not isinstance(item, dict):
        raise ValueError(f"{where}: must be a JSON object with fields {', '.join(PERSONA_FIELDS)}")
    values = {key: _persona_text(item, key, where) for key in PERSONA_FIELDS}
    name = values["name"]
    if "\n" in name or len(name) > NAME_MAX_CHARS:
        raise ValueError(
            f"{where}: field 'name' must be a short display name on one line (at most "
            f"{NAME_MAX_CHARS} characters), got {name!r:.80}"
        )
    if name.casefold() == LEADER:
        raise ValueError(f"{where}: the name {name!r} is the panel leader's; choose another name")
    return Persona(**values)


def _persona_text(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: field {key!r} must be a non-empty string, got {value!r:.80}")
    return value.strip()


def _check_unique_names(personas: list[Persona]) -> None:
    # Compared without case: "Dr. Ada" and "dr. ada" would be one speaker in the dialogue pane.
    seen: set[str] = set()
    repeated: list[str] = []
    for persona in personas:
        key = persona.name.casefold()
        if key in seen and persona.name not in repeated:
            repeated.append(persona.name)
        seen.add(key)
    if repeated:
        raise ValueError(
            f"persona names must be unique; give a different name instead of the repeated "
            f"{', '.join(map(repr, repeated))}"
        )


def check_panel_settings(members: int, turns: int, count: int) -> None:
    """Refuse a panel that cannot discuss, naming the labtui.toml setting to change."""
    if members < 2:
        raise ConfigError(
            f"[ideas] panel = {members}: a panel needs at least 2 personas to discuss",
            "write panel = 2 or more in labtui.toml, or panel = 0 for no panel",
        )
    if turns < 1:
        raise ConfigError(
            f"[ideas] panel_turns = {turns}: the panel would never speak",
            "write panel_turns = 1 or more in labtui.toml",
        )
    if count < 1:
        raise ConfigError(
            f"[ideas] count = {count}: no idea to propose", "write count = 1 or more in labtui.toml"
        )


# -- the panel ----------------------------------------------------------------------------------


def run_panel(
    ctx: StageContext, *, topic: str, context: str, members: int, turns: int, count: int
) -> PanelResult:
    """Convene ``members`` personas, let them discuss ``topic`` for ``turns`` turns, and have the
    leader propose ``count`` ideas from the discussion."""
    check_panel_settings(members, turns, count)
    leader = ctx.llm(role=LEADER)
    personas = convene(ctx, leader, topic=topic, context=context, members=members)
    summaries = discuss(ctx, leader, personas, topic=topic, context=context, turns=turns)
    ideas = propose_ideas(
        ctx, leader, topic=topic, context=context, summaries=summaries, count=count
    )
    return PanelResult(personas=personas, summaries=summaries, ideas=ideas)


def convene(
    ctx: StageContext, leader: LLM, *, topic: str, context: str, members: int
) -> list[Persona]:
    ctx.say(f"the leader convenes a panel of {members}")
    prompt = ctx.prompt(
        "panel_personas",
        topic=topic,
        context=context,
        members=members,
        name_chars=NAME_MAX_CHARS,
    )
    personas = leader.ask_json(
        [{"role": "user", "content": prompt}], lambda data: parse_personas(data, members)
    )
    ctx.say("the panel: " + "; ".join(f"{p.name}: {p.expertise}" for p in personas))
    return personas


def discuss(
    ctx: StageContext,
    leader: LLM,
    personas: list[Persona],
    *,
    topic: str,
    context: str,
    turns: int,
) -> list[str]:
    """The leader's summary of each turn; the remarks themselves are not kept past their turn."""
    voices = {persona.name: ctx.llm(role=persona.name) for persona in personas}
    summaries: list[str] = []
    for turn in range(1, turns + 1):
        ctx.say(f"panel turn {turn} of {turns}")
        remarks = hold_turn(
            ctx,
            personas,
            voices,
            topic=topic,
            context=context,
            summaries=summaries,
            turn=turn,
            turns=turns,
        )
        summary = summarise_turn(
            ctx, leader, topic=topic, summaries=summaries, remarks=remarks, turn=turn, turns=turns
        )
        summaries.append(summary)
    return summaries


def hold_turn(
    ctx: StageContext,
    personas: list[Persona],
    voices: dict[str, LLM],
    *,
    topic: str,
    context: str,
    summaries: list[str],
    turn: int,
    turns: int,
) -> list[Remark]:
    """Each persona speaks once, in order, hearing what was said before it in this turn."""
    remarks: list[Remark] = []
    for persona in personas:
        ctx.check_stop()
        prompt = ctx.prompt(
            "panel_turn",
            persona=persona.name,
            topic=topic,
            context=context,
            panel=panel_block(personas),
            summaries=summaries_block(summaries),
            remarks=remarks_block(remarks),
            turn=turn,
            turns=turns,
        )
        messages = [
            {"role": "system", "content": persona.card()},
            {"role": "user", "content": prompt},
        ]
        text = voices[persona.name].chat(messages).strip()
        if text:
            remarks.append(Remark(persona.name, text))
        else:
            ctx.say(f"{persona.name} said nothing in panel turn {turn}")
    return remarks


def summarise_turn(
    ctx: StageContext,
    leader: LLM,
    *,
    topic: str,
    summaries: list[str],
    remarks: list[Remark],
    turn: int,
    turns: int,
) -> str:
    if not remarks:
        raise StageFailed(
            f"no panel member said anything in panel turn {turn}",
            f"try a stronger model for stage '{ctx.stage}' in labtui.toml, or [ideas] panel = 0",
        )
    prompt = ctx.prompt(
        "panel_summary",
        topic=topic,
        summaries=summaries_block(summaries),
        remarks=remarks_block(remarks),
        turn=turn,
        turns=turns,
    )
    summary = leader.chat([{"role": "user", "content": prompt}]).strip()
    if not summary:
        # The next turn would hear nothing of this one: better to stop than to discuss blind.
        raise StageFailed(
            f"the panel leader gave an empty summary of panel turn {turn}",
            f"try a stronger model for stage '{ctx.stage}' in labtui.toml, or [ideas] panel = 0",
        )
    return summary


def propose_ideas(
    ctx: StageContext,
    leader: LLM,
    *,
    topic: str,
    context: str,
    summaries: list[str],
    count: int,
) -> list[Idea]:
    prompt = ctx.prompt(
        "panel_ideas",
        topic=topic,
        context=context,
        summaries=summaries_block(summaries),
        count=count,
    )
    return leader.ask_json(
        [{"role": "user", "content": prompt}],
        lambda data: parse_idea_list(data, expected=count, proposal=True),
        schema=IdeaProposals,
    )


# -- prompt blocks ------------------------------------------------------------------------------


def panel_block(personas: list[Persona]) -> str:
    return "\n".join(f"- {p.name}: {p.expertise}" for p in personas)


def summaries_block(summaries: list[str]) -> str:
    if not summaries:
        return "(none yet: this is the first turn)"
    return "\n\n".join(f"Turn {turn}: {summary}" for turn, summary in enumerate(summaries, 1))


def remarks_block(remarks: list[Remark]) -> str:
    if not remarks:
        return "(nobody has spoken yet in this turn)"
    return "\n\n".join(f"{remark.speaker}:\n{remark.text}" for remark in remarks)
