"""Every transcript source jacked knows (`jacked.sources.base.TranscriptSource`).

Adding an agent: its package under `jacked/sources/` and one line below. A source is read when
its folder exists and `disabled_sources` does not name it.
"""
from __future__ import annotations

from jacked.sources.aider.source import AiderSource
from jacked.sources.base import TranscriptSource
from jacked.sources.claude.source import ClaudeSource
from jacked.sources.cline.source import CLINE, KILO, ROO
from jacked.sources.codex.source import CodexSource
from jacked.sources.continue_dev.source import ContinueSource
from jacked.sources.copilot.source import CopilotSource
from jacked.sources.cursor.source import CursorSource
from jacked.sources.gemini.source import GeminiSource
from jacked.sources.goose.source import GooseSource
from jacked.sources.opencode.source import OpencodeSource
from jacked.sources.openhands.source import OpenHandsSource
from jacked.sources.qwen.source import QwenSource

SOURCES: dict[str, TranscriptSource] = {s.name: s for s in (
    ClaudeSource(),
    CodexSource(),
    GeminiSource(),
    OpencodeSource(),
    AiderSource(),
    QwenSource(),
    CLINE, ROO, KILO,
    CopilotSource(),
    CursorSource(),
    ContinueSource(),
    OpenHandsSource(),
    GooseSource(),
)}


def label_of(agent: str | None) -> str:
    """How people call an agent ("Codex CLI"); an unknown name as it is."""
    source = SOURCES.get(agent or "claude")
    return source.label if source is not None else str(agent)
