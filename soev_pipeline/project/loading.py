"""Load a project: project.yaml, its hooks module, its suites, its corpus lookup and its seal."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from soev_pipeline.core.canonical import digest
from soev_pipeline.core.errors import (
    CriterionParamsError,
    DuplicateCriterionError,
    ProjectError,
    SuiteError,
    UnknownCriterionError,
    validation_problem,
    where,
)
from soev_pipeline.core.models import Case, CaseDefinition, CriterionSpec, FrozenModel
from soev_pipeline.core.ports import CaseSetup, CriterionContext
from soev_pipeline.core.project import Project, SuiteEntry
from soev_pipeline.corpus import load_corpus
from soev_pipeline.criteria import CriterionRegistry, builtin_registry
from soev_pipeline.judges import load_prompts, prompt_shas

from .files import inside, load_yaml, parse_yaml, read_text, read_yaml_bytes
from .hooks import import_hooks
from .sealing import check_seal
from .suite_cache import SuiteCache, SuiteFileCases


class SuiteFile(FrozenModel):
    """One suite file: the suite it belongs to, criteria shared by its cases, its cases."""

    suite: str
    criteria: tuple[CriterionSpec, ...] = ()
    cases: tuple[CaseDefinition, ...] = Field(default=())


@dataclass(frozen=True)
class Suite:
    """A suite: the merge of the cases of every file its glob finds, in file order."""

    name: str
    files: tuple[Path, ...]
    cases: tuple[Case, ...]
    case_files: Mapping[str, Path] = field(default_factory=dict, repr=False)
    case_paths: tuple[Path, ...] = field(default=(), repr=False)
    """The file of each case, in the order of `cases`."""

    def digest(self) -> str:
        """The SHA-256 over the digests of the suite's cases, in order; computed once (the
        suite and its cases are frozen)."""
        return self._digest

    @cached_property
    def _digest(self) -> str:
        return digest([[case.id, case.digest()] for case in self.cases])


@dataclass(frozen=True)
class LoadedProject:
    """A project as `load` read it: its definitions, and what its hooks module adds.

    `params` holds the validated parameters of every criterion of every case, by case id
    and position, so grading does not validate them again.
    """

    path: Path
    project: Project
    registry: CriterionRegistry
    suites: list[Suite]
    setup: CaseSetup | None
    context: CriterionContext
    params: Mapping[tuple[str, int], BaseModel] = field(default_factory=dict, repr=False)

    @property
    def directory(self) -> Path:
        return self.path.parent

    def suite(self, name: str) -> Suite:
        for suite in self.suites:
            if suite.name == name:
                return suite
        raise KeyError(name)

    def __repr__(self) -> str:
        # the fields hold every case and the corpus: far too much for a log line
        names = [suite.name for suite in self.suites]
        return f"LoadedProject(path={str(self.path)!r}, suites={names!r})"

    def cases(self) -> Iterator[Case]:
        for suite in self.suites:
            yield from suite.cases

    @cached_property
    def prompt_texts(self) -> dict[str, str]:
        """Every judge prompt, and the rubric texts the project's criteria name, by name.

        Prompts are named by task (`nuggets.coverage`), rubrics by their project path. All
        five prompts count, also those of judge kinds the project does not use: a run
        records the judge it ran with, whole.
        """
        texts = dict(load_prompts())
        texts.update(self.context.rubrics)
        return dict(sorted(texts.items()))

    @cached_property
    def prompt_shas(self) -> dict[str, str]:
        """The SHA-256 of each judge prompt and rubric, hashed once per loaded project."""
        return prompt_shas(self.prompt_texts)

    @property
    def prompts_version(self) -> str:
        """One short hash over all prompt hashes: the code version of the verdicts."""
        return digest(self.prompt_shas)[:12]

    def prompts_version_on_disk(self) -> str:
        """The prompts version of the prompt and rubric files as they are on disk now.

        `prompts_version` is that of when the project loaded; a watcher compares the two
        to notice an edit without loading the project again. A rubric file that cannot be
        read counts as empty, which changes the version too.
        """
        texts = dict(load_prompts())
        for name in self.context.rubrics:
            try:
                texts[name] = read_text(self.directory / name)
            except (OSError, ProjectError):
                texts[name] = ""
        return digest(prompt_shas(dict(sorted(texts.items()))))[:12]


def read_project(path: Path) -> Project:
    """Read and validate project.yaml.

    Raises:
        OSError: the file cannot be read.
        yaml.YAMLError: the file is not valid YAML.
        pydantic.ValidationError: the file is not a valid project.
    """
    raw = load_yaml(path)
    return Project.model_validate({} if raw is None else raw)


def load(path: Path | str, *, suite_cache: Path | None = None) -> LoadedProject:
    """Load a project file with its hooks, its suites and its corpus lookup.

    The commands that need only project.yaml (`report`, `compare`, `plan`) use
    `read_project`; `seal` uses `load_for_sealing`; every other command loads with this.

    Args:
        path: the path of project.yaml; suite globs, rubrics, the corpus and the seal are
            relative to its directory.
        suite_cache: the folder of the cache of parsed suite files
            (`ProjectPaths.suite_cache`); None reads every suite file anew.

    Raises:
        ProjectError: a suite file declares another suite, two cases share an id, a test
            case is not sealed, or the corpus lookup is invalid.
        SealChangedError: a sealed test case changed or was removed.
        SuiteError: a suite has no file, or a suite file is invalid.
        UnknownCriterionError, CriterionParamsError: a criterion is invalid.
        DuplicateCriterionError: a hooks kind has the name of another kind.
        ImportError: the hooks module cannot be imported.
        OSError: the project file or a rubric file cannot be read.
        yaml.YAMLError, pydantic.ValidationError: the project file is invalid.
    """
    return _load(path, allow_test_additions=False, check_sealed=True, suite_cache=suite_cache)


def load_for_sealing(
    path: Path | str, *, append: bool, suite_cache: Path | None = None
) -> LoadedProject:
    """Load a project to write its seal: without comparing the test cases with the seal
    (it is about to be replaced), or, with `append`, accepting test cases the seal lacks
    while every sealed one must be unchanged."""
    return _load(path, allow_test_additions=append, check_sealed=append, suite_cache=suite_cache)


def _load(
    path: Path | str,
    *,
    allow_test_additions: bool,
    check_sealed: bool,
    suite_cache: Path | None,
) -> LoadedProject:
    path = Path(path).resolve()
    project = read_project(path)
    registry = builtin_registry()

    setup: CaseSetup | None = None
    if project.hooks is not None:
        module = import_hooks(project.hooks, path.parent, project_file=path)
        origin = getattr(module, "__file__", None) or project.hooks
        kinds = getattr(module, "CRITERIA", ())
        if not isinstance(kinds, list | tuple):
            raise ProjectError(
                f"{origin}: CRITERIA: must be a list of criterion kinds, not {type(kinds).__name__}"
            )
        for index, kind in enumerate(kinds):
            try:
                registry.register(kind)
            except DuplicateCriterionError as exc:
                raise DuplicateCriterionError(
                    f"{path}: hooks: module {project.hooks!r}: {exc}"
                ) from None
            except TypeError:
                raise ProjectError(
                    f"{origin}: CRITERIA[{index}]: {type(kind).__name__} is not a criterion "
                    "kind (make one with soev_pipeline.criteria.Builtin)"
                ) from None
        setup = getattr(module, "SETUP", None)

    params: dict[tuple[str, int], BaseModel] = {}
    places: dict[tuple[str, int], str] = {}
    cache = None if suite_cache is None else SuiteCache(suite_cache)
    suites = [
        _load_suite(entry, path, project, registry, params, places, cache)
        for entry in project.suites
    ]
    if cache is not None:
        cache.prune()
    _check_unique_ids(suites)
    rubrics = _read_files(path.parent, suites, registry, params, places)
    corpus = None
    if project.corpus is not None:
        corpus = load_corpus(inside(path.parent, project.corpus, field="corpus", source=path))
    if check_sealed:
        test_cases = [case for suite in suites for case in suite.cases if case.split == "test"]
        check_seal(path.parent, test_cases, allow_additions=allow_test_additions)
    context = CriterionContext(messages=dict(project.messages), rubrics=rubrics, corpus=corpus)
    return LoadedProject(path, project, registry, suites, setup, context, params)


def _suite_files(entry: SuiteEntry, project_file: Path) -> list[Path]:
    """The files a suite's glob finds in the project directory, in sorted order.

    Raises:
        ProjectError: the glob is absolute, or a file it finds lies outside the project
            directory once symlinks are resolved.
    """
    directory = project_file.parent
    field_name = f"suites: suite {entry.name!r}: files"
    if Path(entry.files).is_absolute():
        raise ProjectError(
            f"{project_file}: {field_name}: {entry.files!r} is an absolute path; paths in a "
            "project are relative to the project directory"
        )
    found = sorted(path for path in directory.glob(entry.files) if path.is_file())
    for path in found:
        inside(directory, path.relative_to(directory), field=field_name, source=project_file)
    return found


def _located(exc: ValidationError, raw: Any, file: Path) -> str:
    """Turn the first error of `exc` into `file: case 'id': field: message`.

    The case is read from `raw`, the file as parsed, since the error is about a case that
    did not validate; a test case is named by its number alone.
    """
    loc = tuple(exc.errors()[0]["loc"])
    if len(loc) < 2 or loc[0] != "cases" or not isinstance(loc[1], int):
        return f"{where(file)}: {validation_problem(exc)}"
    position = loc[1]
    cases = raw.get("cases") if isinstance(raw, dict) else None
    found = cases[position] if isinstance(cases, list) and position < len(cases) else None
    case_id = found.get("id") if isinstance(found, dict) else None
    split = found.get("split") if isinstance(found, dict) else None
    place = where(
        file,
        case=None if case_id is None else str(case_id),
        split=split if isinstance(split, str) else None,
        position=position,
    )
    return f"{place}: {validation_problem(exc, skip=2)}"


def _load_suite(
    entry: SuiteEntry,
    project_file: Path,
    project: Project,
    registry: CriterionRegistry,
    params: dict[tuple[str, int], BaseModel],
    places: dict[tuple[str, int], str],
    cache: SuiteCache | None,
) -> Suite:
    files = _suite_files(entry, project_file)
    if not files:
        raise SuiteError(
            f"{project_file}: suites: suite {entry.name!r}: no file matches {entry.files!r}"
        )
    cases: list[Case] = []
    case_files: dict[str, Path] = {}
    case_paths: list[Path] = []
    for file in files:
        try:
            data = read_yaml_bytes(file)
        except yaml.YAMLError as exc:
            raise _yaml_error(exc, file) from None
        key = None if cache is None else cache.key(data, entry.name)
        parsed = None if cache is None or key is None else cache.get(file, key)
        fresh = parsed is None
        if parsed is None:
            parsed = _parse_suite_file(file, data, entry.name)
        for position, case in enumerate(parsed.cases):
            place = where(file, case=case.id, split=case.split, position=position)
            if case.message is not None and case.message not in project.messages:
                known = ", ".join(repr(code) for code in project.messages) or "none"
                raise SuiteError(
                    f"{place}: message: {case.message!r} is not a project message (known: {known})"
                )
            for index, spec in enumerate(case.criteria):
                field_name = (
                    f"criteria[{index}] (shared by the file)"
                    if index < parsed.shared
                    else f"criteria[{index - parsed.shared}]"
                )
                places[(case.id, index)] = f"{place}: {field_name}"
                params[(case.id, index)] = _validate_criterion(
                    registry, spec, places[(case.id, index)]
                )
            cases.append(case)
            case_paths.append(file)
            case_files.setdefault(case.id, file)
        if cache is not None and key is not None and fresh:
            cache.put(file, key, parsed)
    return Suite(entry.name, tuple(files), tuple(cases), case_files, tuple(case_paths))


def _parse_suite_file(file: Path, data: bytes, suite: str) -> SuiteFileCases:
    """Parse and validate the bytes of a suite file of `suite` into its cases.

    Raises:
        SuiteError: the file is not valid YAML or not a valid suite file.
        ProjectError: the file declares another suite.
    """
    try:
        raw = parse_yaml(data, file)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, file) from None
    if not isinstance(raw, dict):
        raise SuiteError(f"{file}: a suite file must be a mapping with 'suite' and 'cases'")
    try:
        parsed = SuiteFile.model_validate(raw)
    except ValidationError as exc:
        raise SuiteError(_located(exc, raw, file)) from None
    if parsed.suite != suite:
        raise ProjectError(
            f"{file}: suite: the file declares suite {parsed.suite!r}, "
            f"but the project entry {suite!r} found it"
        )
    cases = []
    for definition in parsed.cases:
        fields = definition.model_dump()
        fields["criteria"] = [*parsed.criteria, *definition.criteria]
        cases.append(Case.model_validate({**fields, "suite": suite}))
    return SuiteFileCases(tuple(cases), len(parsed.criteria))


def _yaml_error(exc: yaml.YAMLError, file: Path) -> SuiteError:
    """The one-line error of a suite file that is not valid YAML, with its line if known."""
    mark = getattr(exc, "problem_mark", None)
    place = where(
        file,
        line=None if mark is None else mark.line + 1,
        column=None if mark is None else mark.column + 1,
    )
    problem = getattr(exc, "problem", None) or "invalid YAML"
    return SuiteError(f"{place}: {problem}")


def _check_unique_ids(suites: Sequence[Suite]) -> None:
    """Case and variant ids are unique across the project; a test case's id is not printed."""
    seen: dict[str, tuple[Path, str]] = {}
    for suite in suites:
        for case, file in zip(suite.cases, suite.case_paths, strict=True):
            for name in (case.id, *(variant.id for variant in case.variants)):
                if name not in seen:
                    seen[name] = (file, case.split)
                    continue
                other_file, other_split = seen[name]
                label = (
                    "a test case or variant id"
                    if "test" in (case.split, other_split)
                    else f"case or variant id {name!r}"
                )
                raise ProjectError(f"{file}: id: {label} is not unique (also in {other_file})")


def _validate_criterion(registry: CriterionRegistry, spec: CriterionSpec, place: str) -> BaseModel:
    try:
        return registry.validate(spec)
    except UnknownCriterionError as exc:
        raise UnknownCriterionError(f"{place}: kind: {exc}") from None
    except CriterionParamsError as exc:
        raise CriterionParamsError(f"{place}: {exc}") from None


def _read_files(
    directory: Path,
    suites: Sequence[Suite],
    registry: CriterionRegistry,
    params: Mapping[tuple[str, int], BaseModel],
    places: Mapping[tuple[str, int], str],
) -> dict[str, str]:
    """Read every file the criteria name, e.g. rubrics, by their project-relative path.

    A kind names the files a criterion reads from its parameters (`Builtin.files_of`).

    Raises:
        ProjectError: a path leads outside the project directory, or the file is not text.
        OSError: a file cannot be read.
        Each message names the suite file, the case (a test case by its number alone) and
        the criterion whose parameters name the file.
    """
    texts: dict[str, str] = {}
    for suite in suites:
        for case in suite.cases:
            for index, spec in enumerate(case.criteria):
                kind = registry.get(spec.kind)
                for reference in kind.files_of(params[(case.id, index)]):
                    if reference in texts:
                        continue
                    place = places[(case.id, index)]
                    file, _, field_name = place.rpartition(": ")
                    try:
                        target = inside(directory, reference, field=field_name, source=Path(file))
                        texts[reference] = read_text(target)
                    except OSError as exc:
                        reason = exc.strerror or type(exc).__name__
                        raise OSError(
                            exc.errno,
                            f"{reason} (the file of {place})",
                            str(directory / reference),
                        ) from None
    return texts
