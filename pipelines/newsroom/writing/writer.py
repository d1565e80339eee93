"""The writer interface and the default template writer."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import NamedTuple

from pipelines.newsroom.writing import template
from pipelines.newsroom.writing.facts import Facts, MarketFacts


class Written(NamedTuple):
    """A text and what wrote it: 'template' or 'llm'."""

    text: str
    writer: str


class Writer(ABC):
    """Turns facts into text; the assets are typed against this, so writers swap without change."""

    @abstractmethod
    def analyses(self, facts: Sequence[Facts]) -> list[Written]:
        """One analysis per instrument's facts, in order."""

    @abstractmethod
    def summaries(self, facts: Sequence[MarketFacts]) -> list[Written]:
        """One summary per market day's facts, in order."""


class TemplateWriter(Writer):
    """Deterministic and offline: the templates of `template.py`."""

    name = "template"

    def analyses(self, facts: Sequence[Facts]) -> list[Written]:
        return [Written(template.analysis(f), self.name) for f in facts]

    def summaries(self, facts: Sequence[MarketFacts]) -> list[Written]:
        return [Written(template.summary(f), self.name) for f in facts]
