"""Seeded synthetic data for the grading benchmark: a corpus, cases and attempts.

The corpus is Dutch-like law text (compounds of legal stems, Zipf-distributed) with law
names, aliases and article labels; about one unit in five is a lid of an article. The
attempts' replies quote the corpus (and sometimes make a quote up), mention articles of
known and unknown laws in several phrasings, cite units (some that do not exist), and
report usage; a few attempts failed. The same seed gives the same data.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from soev_pipeline.core.models import Case, Evidence, Failure, Turn, Usage, VariantEvidence
from soev_pipeline.corpus import CorpusUnit

MESSAGES = {
    "privacy": "Ik kan geen vragen over persoonsgegevens beantwoorden.",
    "out_of_scope": "Die vraag valt buiten wat ik kan beantwoorden.",
}

_FUNCTION_WORDS = """
de het een en van in op te dat die voor met aan bij door als niet of ook wordt worden is zijn
kan moet mag zal heeft hebben naar om over tot uit na onder tegen binnen zonder dan
""".split()  # noqa: SIM905
_STEMS = """
bezwaar beroep termijn besluit bestuur orgaan belang hebbende aanvraag vergunning subsidie
beschikking rechter rechtbank uitspraak vonnis schade vergoeding werk gever nemer huur koop
overeenkomst verbintenis eigendom bezit recht plicht wet regel bepaling voorschrift toezicht
handhaving last dwangsom boete sanctie bestuurs straf zaak dossier stuk bericht kennisgeving
bekendmaking publicatie gemeente provincie raad college minister staat burger inwoner
onderneming vereniging stichting bestuurder lid vergadering besluitvorming zorgvuldigheid
motivering gelijkheid evenredigheid vertrouwen hoorzitting zienswijze verweer beslissing
herziening intrekking wijziging verlenging opschorting uitstel verzuim gebrek herstel
""".split()  # noqa: SIM905
_SUFFIXES = ["", "", "", "en", "s", "ing", "lijk", "heid", "schrift", "termijn", "procedure"]
_VERBS = """
bepaalt regelt geldt vervalt begint eindigt volgt beslist verleent weigert vordert stelt
""".split()  # noqa: SIM905


@dataclass(frozen=True)
class Law:
    number: int
    name: str
    alias: str
    books: int


def vocabulary(rng: random.Random, size: int = 20000) -> tuple[list[str], list[float]]:
    """Dutch-like words with Zipf-like cumulative weights: compounds of legal stems."""
    words = list(dict.fromkeys(_FUNCTION_WORDS))
    seen = set(words)
    while len(words) < size:
        word = rng.choice(_STEMS) + rng.choice(_STEMS + _SUFFIXES * 4) + rng.choice(_SUFFIXES)
        if word not in seen:
            seen.add(word)
            words.append(word)
    total = 0.0
    cumulative = []
    for rank in range(len(words)):
        total += 1.0 / (rank + 1) ** 1.05
        cumulative.append(total)
    return words, cumulative


def make_laws(rng: random.Random, count: int) -> list[Law]:
    laws = [
        Law(5537, "Algemene wet bestuursrecht", "Awb", 11),
        Law(5289, "Burgerlijk Wetboek", "BW", 8),
        Law(1840, "Grondwet", "Gw", 0),
    ]
    aliases = {law.alias.casefold() for law in laws}
    while len(laws) < count:
        stem = rng.choice(_STEMS)
        name = rng.choice(["Wet op de {}", "Wet {}", "Algemene wet {}", "{}wet"]).format(stem)
        alias = "W" + stem[:2] + str(len(laws))
        if alias.casefold() in aliases:
            continue
        aliases.add(alias.casefold())
        laws.append(Law(10000 + len(laws), name[0].upper() + name[1:], alias, rng.choice([0, 4])))
    return laws


def sentence(rng: random.Random, words: list[str], cumulative: list[float], length: int) -> str:
    chosen = rng.choices(words, cum_weights=cumulative, k=length)
    chosen.insert(rng.randrange(1, length), rng.choice(_VERBS))
    return chosen[0].capitalize() + " " + " ".join(chosen[1:]) + "."


def make_corpus(seed: int, units: int) -> list[CorpusUnit]:
    """About 600 characters of text per unit; some units are lids of an article."""
    rng = random.Random(seed)
    words, cumulative = vocabulary(rng)
    laws = make_laws(rng, max(3, units // 800))
    made: list[CorpusUnit] = []
    counters: dict[int, int] = defaultdict(int)
    while len(made) < units:
        law = laws[len(made) % len(laws)]
        counters[law.number] += 1
        n = counters[law.number]
        label = f"{n % law.books + 1}:{n}" if law.books else str(n)
        article_id = f"BWBR{law.number:07d}/artikel-{label}"
        lids = [article_id] + [f"{article_id}/lid-{m}" for m in (1, 2) if rng.random() < 0.12]
        for unit_id in lids[: units - len(made)]:
            lengths = [rng.randint(8, 16) for _ in range(rng.randint(3, 5))]
            text = " ".join(sentence(rng, words, cumulative, length) for length in lengths)
            made.append(CorpusUnit(unit_id, text, law.name, (law.alias,), label))
    return made


def make_cases(rng: random.Random, corpus: list[CorpusUnit], count: int) -> list[Case]:
    cases = []
    for n in range(count):
        anchor = rng.randrange(len(corpus))
        required = [[corpus[anchor].id]] + [
            [corpus[rng.randrange(len(corpus))].id] for _ in range(rng.randint(0, 2))
        ]
        forbidden = [corpus[rng.randrange(len(corpus))].id] if rng.random() < 0.5 else []
        behaviour = rng.choices(["answer", "refuse", "abstain"], [8, 1, 1])[0]
        cases.append(
            Case.model_validate(
                {
                    "id": f"bench-{n:05d}",
                    "suite": "bench",
                    "split": "dev" if n % 4 else "test",
                    "input": f"Vraag {n} over de termijn?",
                    "behaviour": behaviour,
                    "message": {"refuse": "privacy", "abstain": "out_of_scope"}.get(behaviour),
                    "sources": {"required": required, "forbidden": forbidden},
                    "variants": [
                        {"id": f"bench-{n:05d}-{v}", "input": f"Anders gevraagd {v}?"}
                        for v in range(rng.choice([0, 0, 1, 2]))
                    ],
                }
            )
        )
    return cases


def _quote(rng: random.Random, corpus: list[CorpusUnit], words: list[str]) -> str:
    """A quote in one of three styles: mostly from a unit, sometimes made up."""
    if rng.random() < 0.75:
        source = corpus[rng.randrange(len(corpus))].text.split()
        start = rng.randrange(max(1, len(source) - 12))
        span = " ".join(source[start : start + rng.randint(3, 12)])
        if rng.random() < 0.3:
            span = span.replace(" ", "\n  ", 1).lower()
    else:
        span = " ".join(rng.choices(words[:3000], k=rng.randint(4, 10)))
    opening, closing = rng.choice([('"', '"'), ("“", "”"), ("„", "”"), ("„", "“")])
    return f"{opening}{span}{closing}"


def _mention(rng: random.Random, corpus: list[CorpusUnit]) -> str:
    unit = corpus[rng.randrange(len(corpus))]
    roll = rng.random()
    if roll < 0.08:
        return f"artikel {rng.randint(1, 40)} lid 2 Wet Fantasie"
    label = unit.article if roll > 0.16 else f"{unit.article}9"
    alias = unit.aliases[0]
    return rng.choice(
        [
            f"artikel {label} {alias}",
            f"art. {label} {alias}",
            f"artikel {label} van de {unit.law}",
            f"artikel {label}, eerste lid, {alias}",
            f"de artikelen {label} en {unit.article} {alias}",
        ]
    )


def _citations(rng: random.Random, corpus: list[CorpusUnit], case: Case) -> tuple[str, ...]:
    cited = [rng.choice(group) for group in case.sources.required if rng.random() < 0.7]
    for _ in range(rng.randint(0, 3)):
        unit = corpus[rng.randrange(len(corpus))].id
        cited.append(rng.choice([unit, unit, f"{unit}/lid-1", "BWBR9999999/artikel-1"]))
    if case.sources.forbidden and rng.random() < 0.1:
        cited.append(case.sources.forbidden[0])
    return tuple(cited)


def make_attempts(
    seed: int, corpus: list[CorpusUnit], cases: list[Case], count: int
) -> list[tuple[Case, Evidence]]:
    rng = random.Random(seed + 1)
    words, cumulative = vocabulary(random.Random(seed))
    start = datetime(2025, 1, 1, tzinfo=UTC)
    attempts = []
    for n in range(count):
        case = cases[n % len(cases)]
        if case.message is not None and rng.random() < 0.8:
            reply: str | None = MESSAGES[case.message]
        else:
            parts = [sentence(rng, words, cumulative, rng.randint(6, 16)) for _ in range(3)]
            parts += [f"Volgens {_mention(rng, corpus)} geldt:" for _ in range(rng.randint(0, 3))]
            parts += [_quote(rng, corpus, words) for _ in range(rng.randint(0, 3))]
            if rng.random() < 0.03:
                parts.append("Mail naar jan.jansen@example.nl voor meer.")
            rng.shuffle(parts)
            reply = " ".join(parts)
        failure = Failure(code="timeout") if rng.random() < 0.02 else None
        if failure is not None:
            reply = None
        citations = _citations(rng, corpus, case) if reply is not None else ()
        usage = Usage(prompt_tokens=rng.randint(300, 4000), completion_tokens=rng.randint(50, 900))
        turn = Turn(
            input=case.input,
            reply=reply,
            citations=citations,
            usage=usage,
            duration_s=rng.uniform(0.5, 25),
            failure=failure,
        )
        variants = tuple(
            VariantEvidence(
                id=variant.id,
                reply="Ja.",
                citations=citations if rng.random() < 0.7 else citations[:1],
                turns=(Turn(input=variant.turns[0], reply="Ja.", usage=usage, duration_s=1.0),),
            )
            for variant in case.variants
        )
        attempts.append(
            (
                case,
                Evidence(
                    case_id=case.id,
                    suite=case.suite,
                    split=case.split,
                    attempt=n // len(cases),
                    turns=(turn,),
                    reply=reply,
                    citations=citations,
                    refusal_code=None,
                    variants=variants,
                    started_at=start + timedelta(seconds=n),
                    finished_at=start + timedelta(seconds=n + 2),
                ),
            )
        )
    return attempts


def write_project_with_run(
    folder: Path,
    *,
    seed: int,
    units: int,
    cases: int,
    attempts: int,
    criteria: list[dict[str, Any]],
    run_id: str,
) -> None:
    """Write into `folder` a generated project (corpus.jsonl, one suite `bench` of `cases`
    cases sharing `criteria`, project.yaml) and the archive of one run of `attempts`
    attempts, ungraded."""
    import yaml

    from soev_pipeline.project import load
    from soev_pipeline.run import RunArchive, build_manifest

    corpus = make_corpus(seed, units)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for unit in corpus:
            record = {
                "id": unit.id,
                "text": unit.text,
                "law": unit.law,
                "aliases": list(unit.aliases),
                "article": unit.article,
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    made = make_cases(random.Random(seed + 2), corpus, cases)
    suite = {
        "suite": "bench",
        "criteria": criteria,
        "cases": [case.model_dump(mode="json", exclude={"suite"}) for case in made],
    }
    (folder / "suites").mkdir()
    with (folder / "suites" / "bench.yaml").open("w", encoding="utf-8") as out:
        yaml.safe_dump(suite, out, allow_unicode=True, sort_keys=False)
    project = {
        "name": "bench",
        "system": {"base_url": "http://127.0.0.1:9/", "agent": "bench"},
        "suites": [{"name": "bench", "files": "suites/*.yaml"}],
        "messages": MESSAGES,
        "corpus": "corpus.jsonl",
    }
    (folder / "project.yaml").write_text(yaml.safe_dump(project), encoding="utf-8")
    loaded = load(folder / "project.yaml")
    made_attempts = make_attempts(seed, corpus, list(loaded.cases()), attempts)
    manifest = build_manifest(
        run_id=run_id,
        project="bench",
        suites=["bench"],
        split=None,
        k=max(evidence.attempt for _, evidence in made_attempts) + 1,
        cases=list(loaded.cases()),
        shas=loaded.prompt_shas,
    )
    archive = RunArchive(folder / "runs", run_id)
    archive.create(manifest)
    with archive.evidence_writer() as writer:
        for _, evidence in made_attempts:
            writer.append(evidence)
