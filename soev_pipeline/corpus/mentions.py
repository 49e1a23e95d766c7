"""Article mentions in a reply, and the index that resolves them to corpus units.

A reply names articles in prose: `artikel 6:7 Awb`, `art. 6:162 BW`, `artikel 8:1, eerste
lid, van de Algemene wet bestuursrecht`, `artikelen 6:7 en 6:8 Awb`. `find_mentions` reads
each such reference as one mention per article label with the law named after it, and
`MentionIndex` maps (law name or alias, article label) to a unit in one dictionary look-up.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from soev_pipeline.text import shorten

from .sources import article_of, segments

if TYPE_CHECKING:
    from .unit import CorpusUnit

_KEYWORD = re.compile(r"(?<!\w)(?:artikelen|artikel|artt?\.|art)(?![^\W\d])", re.IGNORECASE)
_LABEL = re.compile(r"\s*(\d+[a-z]?(?:[.:]\d+[a-z]?)*)(?!\w)", re.IGNORECASE)
_ORDINAL = (
    r"(?:eerste|tweede|derde|vierde|vijfde|zesde|zevende|achtste|negende|tiende|elfde|"
    r"twaalfde|dertiende|veertiende|vijftiende|\d+(?:e|de|ste))"
)
_QUALIFIER = re.compile(
    r",?\s*(?:"
    rf"{_ORDINAL}(?:\s*(?:,|en|of|tot en met)\s*{_ORDINAL})*\s+(?:lid|leden)"
    r"|(?:lid|leden)\s+\d+[a-z]?(?:\s*(?:,|en|of|t/m|tot en met|-)\s*\d+[a-z]?)*"
    r"|(?:aanhef\s+en\s+)?(?:onder|sub|onderdeel)\s+[a-z0-9]{1,4}°?"
    r"|aanhef"
    r")(?!\w)",
    re.IGNORECASE,
)
_SEPARATOR = re.compile(
    r"\s*(?:,\s*(?:en\s+|of\s+)?|\s(?:en|of|juncto|jo\.?|tot en met|t/m)\s+|[-–]\s*)"
    r"(?:(?:artikelen|artikel|artt?\.|art)\s+)?",
    re.IGNORECASE,
)
_LAW_LEAD = re.compile(r"\s*,?\s*\(?(?:(?:van|uit)\s+(?:de|het|der)\s+|(?:van|uit)\s+)?")
_LAW_WORD = re.compile(r"\w+")
_LAW_GAP = re.compile(r"[\s.'’/-]*")
_ARTICLE_PREFIX = re.compile(r"^(?:artikel|art\.?)\s*", re.IGNORECASE)
_LEADING_ARTICLE = ("de", "het")
_MAX_LAW_WINDOW = 240
_UNKNOWN_LAW_WORDS = 5
_SHOWN_CHARS = 80
_CONNECTORS = frozenset({"op", "de", "het", "der", "van", "tot", "inzake", "in", "voor"})


def law_key(name: str) -> str:
    """The normalized law name or alias: its words, case-folded, without a leading article."""
    words = [word.casefold() for word in _LAW_WORD.findall(name)]
    if len(words) > 1 and words[0] in _LEADING_ARTICLE:
        words = words[1:]
    return " ".join(words)


def article_key(label: str) -> str:
    """The normalized article label: `Artikel 6:7 ` and `6:7` are both `6:7`."""
    return "".join(_ARTICLE_PREFIX.sub("", label.strip()).split()).casefold()


@dataclass(frozen=True)
class Mention:
    """One article that a reply mentions: its label and the law named with it.

    `law` is the law as the reply wrote it, `law_key` its normalized form when the corpus
    knows it and None when it does not, and `text` the reference as written (shortened).
    """

    article: str
    law: str
    law_key: str | None
    text: str


class MentionIndex:
    """Resolves (law name or alias, article label) to a corpus unit, and finds mentions.

    Built once per corpus from the `law`, `aliases` and `article` of its units; a unit
    without `article` gets the label of its id's article segment (`artikel-6:7` is `6:7`).
    When several units share a law and a label (an article and its lids), the one with the
    shortest id, the article itself, is the one a mention resolves to.
    """

    def __init__(self, units: dict[tuple[str, str], str]) -> None:
        self._units = units
        self._laws = {law for law, _ in units}
        self._longest = max((len(law.split()) for law in self._laws), default=0)

    @classmethod
    def build(cls, units: Iterable[CorpusUnit]) -> MentionIndex:
        """Index every unit that has a law name and an article label."""
        found: dict[tuple[str, str], str] = {}
        laws: dict[str, str] = {}  # the key of each law name: a corpus names few laws
        for unit in units:
            if not unit.law:
                continue
            label = unit.article if unit.article is not None else _label_of_id(unit.id)
            article = article_key(label) if label else ""
            if not article:
                continue
            for name in (unit.law, *unit.aliases):
                law = laws.get(name)
                if law is None:
                    law = laws[name] = law_key(name)
                if not law:
                    continue
                key = (law, article)
                known = found.get(key)
                if known is None or len(unit.id) < len(known):
                    found[key] = unit.id
        return cls(found)

    def knows_law(self, key: str) -> bool:
        return key in self._laws

    def resolve(self, mention: Mention) -> str | None:
        """The id of the unit that `mention` names, or None."""
        if mention.law_key is None:
            return None
        return self._units.get((mention.law_key, article_key(mention.article)))

    def find_mentions(self, text: str) -> tuple[list[Mention], int]:
        """The article mentions of `text`, and how many references named no law.

        A reference is a keyword (`artikel`, `artikelen`, `art.`, `artt.`), one or more
        labels (lists with `,`, `en`, `of`, `jo.`; ranges give their two ends), qualifiers
        such as `lid 2`, `eerste lid` or `onder a` (resolution is by article, so they are
        skipped), and then the law: a name or alias the corpus knows (longest first, any
        case, after an optional `van de`/`van het` or `(`), or else a capitalized word such as
        `Wet`, which makes a mention of a law the corpus does not know. A reference
        followed by neither (`artikel 6:7 bepaalt`) names no law and is only counted.
        """
        mentions: list[Mention] = []
        without_law = 0
        position = 0
        while match := _KEYWORD.search(text, position):
            labels, end = _labels(text, match.end())
            if not labels:
                position = match.end()
                continue
            lead = _LAW_LEAD.match(text, end)
            law = self._law_at(text, lead.end() if lead else end)
            if law is None:
                without_law += 1
                position = end
                continue
            name, key, law_end = law
            written = " ".join(text[match.start() : law_end].split())
            mentions.extend(
                Mention(label, name, key, shorten(written, _SHOWN_CHARS)) for label in labels
            )
            position = law_end
        return mentions, without_law

    def _law_at(self, text: str, start: int) -> tuple[str, str | None, int] | None:
        """The law named at `start`: (as written, known key or None, end), or None."""
        window = text[start : start + _MAX_LAW_WINDOW]
        words: list[re.Match[str]] = []
        at = 0
        while len(words) < max(self._longest, _UNKNOWN_LAW_WORDS):
            word = _LAW_WORD.match(window, at)
            if word is None:
                break
            words.append(word)
            gap = _LAW_GAP.match(window, word.end())
            at = gap.end() if gap else word.end()
        for count in range(min(len(words), self._longest), 0, -1):
            for key in _law_keys([word.group() for word in words[:count]]):
                if key in self._laws:
                    end = words[count - 1].end()
                    return window[:end], key, start + end
        if words and words[0].group()[0].isupper():
            end = words[_unknown_law_length(words) - 1].end()
            return window[:end], None, start + end
        return None


def _law_keys(words: list[str]) -> list[str]:
    """The keys that `words` may name a law by; `B.W.` and `W.v.Sr.` also as `bw`, `wvsr`."""
    keys = [law_key(" ".join(words))]
    if len(words) > 1 and all(len(word) <= 3 for word in words):
        keys.append("".join(words).casefold())
    return keys


def _unknown_law_length(words: list[re.Match[str]]) -> int:
    """How many of `words` a law name the corpus does not know takes, for the detail.

    A name runs on over capitalized words and connectors (`Wet op de rechtsbijstand`);
    a lowercase word ends it unless it follows a connector (`Wet X bepaalt` is `Wet X`).
    """
    count = 1
    for previous, word in pairwise(words):
        text = word.group()
        joins = text.casefold() in _CONNECTORS or previous.group().casefold() in _CONNECTORS
        if not (text[0].isupper() or joins):
            break
        count += 1
    while count > 1 and words[count - 1].group().casefold() in _CONNECTORS:
        count -= 1
    return count


def _labels(text: str, start: int) -> tuple[list[str], int]:
    """The article labels of a reference from `start`, and where the reference ends."""
    labels: list[str] = []
    label = _LABEL.match(text, start)
    if label is None:
        return labels, start
    labels.append(label.group(1))
    end = label.end()
    while True:
        while qualifier := _QUALIFIER.match(text, end):
            end = qualifier.end()
        separator = _SEPARATOR.match(text, end)
        following = _LABEL.match(text, separator.end()) if separator else None
        if following is None:
            return labels, end
        labels.append(following.group(1))
        end = following.end()


def _label_of_id(unit_id: str) -> str | None:
    """`6:7` for an id whose article segment is `artikel-6:7`, else None."""
    last = segments(article_of(unit_id))[-1:]
    if not last or not last[0].casefold().startswith("artikel"):
        return None
    return last[0][len("artikel") :].lstrip("-_ ") or None
