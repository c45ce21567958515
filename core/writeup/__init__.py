"""The paper labtui writes: section by section (sections, section_text, section_tidy,
section_facts, section_repair), the researcher's own draft completed (draft_parts), citation
rounds, number tracing, compile rounds, the ledger appendix, and the whole-draft check
(completeness). May import: provenance and every layer below it; the layers are pyproject.toml's
import-linter contract.
"""
