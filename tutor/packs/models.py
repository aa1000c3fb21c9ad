"""The lesson-pack format (docs/pack-format.md) as pydantic models.

A pack is ``pack.yaml`` (a :class:`PackManifest`) plus one folder per lesson holding
``lesson.yaml`` (a :class:`Lesson`). Any code or Markdown field may hold the text inline
or name a file beside the YAML: a one-line value ending in ``.py`` (code) or ``.md``
(Markdown) is read from that file by the loader before these models see it.

Expressions in checks are Python evaluated inside the kernel. ``expr`` is evaluated in the
learner's namespace (setup + learner code); ``expected`` in the reference namespace (setup
+ reference solution, run with the same seeds), so it may name the reference's variables or
be a literal such as ``(1, 3)``.
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, field_validator, model_validator

from tutor.checks import setupnames
from tutor.checks.vocabulary import INPUT_DEVICES, INPUT_DTYPES, TENSOR_PROPERTIES

ID_PATTERN = r"^[a-z0-9][a-z0-9_-]*$"
Id = Annotated[str, Field(pattern=ID_PATTERN, max_length=64, description="lowercase letters, digits, '-' and '_'")]
Code = Annotated[str, Field(description="Python code, inline or the name of a .py file beside the YAML")]
Markdown = Annotated[str, Field(description="Markdown, inline or the name of a .md file beside the YAML")]
Expr = Annotated[str, Field(min_length=1, description="a Python expression")]

# Literal of a tuple: the values live in one place (mypy reads these as plain str).
TensorProperty = Literal[TENSOR_PROPERTIES]  # type: ignore[valid-type]
InputDevice = Literal[INPUT_DEVICES]  # type: ignore[valid-type]
# When a learner on Gradescope sees a check's own test (Gradescope's words for it).
Visibility = Literal["visible", "hidden", "after_due_date", "after_published"]


# An autograd node's class name as grad_fn shows it, with or without its "Backward0" ending;
# in graph_with, alternatives joined by | (Index|Gather: either will do).
OpName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_]*(\|[A-Za-z][A-Za-z0-9_]*)*$", max_length=200)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


# ---------------------------------------------------------------- checks


class _Check(Strict):
    id: Id | None = Field(None, description="names the check in results and in mistakes.failed_check")
    message: str | None = Field(None, description="feedback shown when this check fails, before the generated diff")
    label: str | None = Field(
        None,
        min_length=1,
        description="how feedback names what is checked, instead of the raw expression, e.g. 'the loss after one step'",
    )
    hidden: bool | None = Field(
        None,
        description="decide without describing: the learner is told only how many hidden checks failed (no name, "
        "expected value, diff or message); default: the pack's hidden_checks",
    )
    visibility: Visibility | None = Field(
        None,
        description="when a learner on Gradescope sees this check's own test; anything but visible also hides "
        "the check as hidden: true does; default: hidden for a hidden check",
    )

    @model_validator(mode="after")
    def _hidden_agrees(self) -> _Check:
        if self.hidden is True and self.visibility == "visible":
            raise ValueError("hidden: true contradicts visibility: visible (drop one)")
        if self.hidden is False and self.visibility not in (None, "visible"):
            raise ValueError(f"visibility: {self.visibility} hides the check, so hidden: false contradicts it")
        return self

    @property
    def is_hidden(self) -> bool:
        """Whether the learner is told only that this check passed or failed."""
        return self.hidden is True or self.visibility not in (None, "visible")

    @property
    def gradescope_visibility(self) -> str:
        return self.visibility or ("hidden" if self.is_hidden else "visible")


class _Tolerance(Strict):
    rtol: float | None = Field(None, ge=0, description="relative tolerance (torch.isclose semantics)")
    atol: float | None = Field(None, ge=0, description="absolute tolerance")


class ValueCheck(_Check, _Tolerance):
    """An expression's value equals (or, with rtol/atol, is close to) the expected value."""

    kind: Literal["value"]
    expr: Expr
    expected: Expr | None = Field(None, description="expression in the reference namespace; default: expr itself")
    strict_types: bool = Field(
        False,
        description=(
            "the value must have the expected one's type: a list is not a tuple, a tuple or list is not a tensor "
            "(by default equal values of these types match)"
        ),
    )


class TensorCheck(_Check, _Tolerance):
    """A tensor compared with the full diff: every property in ``compare``."""

    kind: Literal["tensor"]
    expr: Expr
    expected: Expr | None = Field(None, description="expression in the reference namespace; default: expr itself")
    compare: list[TensorProperty] = Field(
        default_factory=lambda: ["shape", "dtype", "device", "values"],
        min_length=1,
        description="which properties must match",
    )
    broadcast: bool = Field(
        False, description="compare values after broadcasting (otherwise values of different shapes never match)"
    )
    shares_storage_with: Expr | None = Field(None, description="must be a view of this tensor (learner namespace)")
    independent_of: Expr | None = Field(None, description="must NOT share storage with this tensor (a copy)")
    graph_with: list[OpName] = Field(
        default_factory=list,
        description="autograd ops the value must have been computed through (LogSoftmax: LogSoftmaxBackward0; Index|Gather: either)",
    )
    graph_without: list[OpName] = Field(
        default_factory=list, description="autograd ops the value must not have been computed through (NllLoss)"
    )


class RaisesCheck(_Check):
    """Running ``expr`` (an expression or statements) raises the given exception."""

    kind: Literal["raises"]
    expr: Expr
    exception: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$", description="exception class name, e.g. RuntimeError")
    match: str | None = Field(None, description="regular expression searched in the exception message")

    @field_validator("match")
    @classmethod
    def _regex_compiles(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return v


class ModuleCheck(_Check):
    """Facts about an nn.Module: counts, registered names, plain tensor attributes, mode."""

    kind: Literal["module"]
    expr: Expr
    parameters: int | None = Field(None, ge=0, description="total number of parameter elements")
    trainable: int | None = Field(None, ge=0, description="number of elements with requires_grad")
    parameter_names: list[str] | None = Field(None, description="exact set of named_parameters() names")
    buffer_names: list[str] | None = Field(None, description="exact set of named_buffers() names")
    training: bool | None = Field(None, description="expected value of .training")
    no_plain_tensors: bool = Field(True, description="fail if a tensor is held as a plain, unregistered attribute")


class StateDictCheck(_Check):
    """state_dict round trip: save, load into a fresh instance with weights_only=True, compare outputs."""

    kind: Literal["state_dict"]
    expr: Expr
    factory: Expr = Field(description="expression that builds a fresh instance, e.g. MLP()")
    probe: Expr = Field(description="expression for the probe input, e.g. torch.randn(4, 64)")
    keys: list[str] | None = Field(None, description="exact set of state_dict() keys (buffers included)")


class SameAsSolutionCheck(_Check, _Tolerance):
    """Named variables equal those of the reference solution run with the same seeds."""

    kind: Literal["same_as_solution"]
    names: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = Field(min_length=1)


Name = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
Range = Annotated[list[int], Field(min_length=2, max_length=2)]


class ArgSpec(Strict):
    """One generated argument of a function check."""

    type: Literal["tensor", "int", "float", "choice", "shape", "index", "permutation", "dtype"] = Field(
        description=(
            "tensor, int, float, choice; shape: a tuple of sizes; index: a tuple of indices within a shape; "
            "permutation: an order of 0..k-1; dtype: a torch dtype from dtypes"
        )
    )
    name: Name | None = Field(
        None, description="the argument's name in feedback and in property (default: the reference's parameter name)"
    )
    shape: list[int | str] | None = Field(
        None, description="tensor shape, or the shape an index lies within; strings are dimension names from dims"
    )
    dtypes: list[Literal[INPUT_DTYPES]] = Field(default_factory=lambda: ["float32"])  # type: ignore[valid-type]
    requires_grad: bool = False
    min: float | None = None
    max: float | None = None
    values: list | None = Field(None, description="choices for type: choice")
    dim: str | None = Field(
        None, description="int: the size of this named dimension (from dims); permutation: its length"
    )
    ndim: Range | None = Field(None, description="shape: [low, high] number of dimensions (default [1, 3])")
    of: Name | None = Field(
        None,
        description="index: within this earlier argument's shape; permutation: of this earlier argument's dimensions",
    )
    broadcasts_with: Name | None = Field(
        None, description="shape or tensor: a shape that broadcasts with this earlier argument's (never the same one)"
    )
    sorted: bool = Field(False, description="tensor: values sorted ascending along the last dimension")
    unique: bool = Field(False, description="tensor: no value repeats (integer tensors draw without replacement)")
    transform: str | None = Field(
        None,
        min_length=1,
        description="expression applied to the generated value, named x (torch is available), e.g. 'x.abs() + 1'",
    )

    @model_validator(mode="after")
    def _fits_type(self) -> ArgSpec:
        if self.type == "tensor" and self.shape is None and self.broadcasts_with is None:
            raise ValueError("a tensor argument needs a shape (or broadcasts_with)")
        if self.dim is not None and self.type not in ("int", "permutation"):
            raise ValueError(
                "dim ties an int or a permutation to a dimension's size: it needs type: int or permutation"
            )
        if (self.sorted or self.unique) and self.type != "tensor":
            raise ValueError("sorted and unique apply to tensor arguments")
        if self.type == "choice" and not self.values:
            raise ValueError("a choice argument needs values")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min is larger than max")
        if self.ndim is not None and (self.type != "shape" or self.ndim[0] > self.ndim[1] or self.ndim[0] < 0):
            raise ValueError("ndim is [low, high] (low <= high, both >= 0) of a shape argument")
        if self.of is not None and self.type not in ("index", "permutation"):
            raise ValueError("of applies to index and permutation arguments")
        if self.type == "index" and (self.of is None) == (self.shape is None):
            raise ValueError("an index argument needs exactly one of of (an earlier argument) and shape")
        if self.type == "permutation" and (self.of is None) == (self.dim is None):
            raise ValueError("a permutation argument needs exactly one of of (an earlier argument) and dim")
        if self.broadcasts_with is not None and self.type not in ("shape", "tensor"):
            raise ValueError("broadcasts_with applies to shape and tensor arguments")
        return self


class FunctionCheck(_Check, _Tolerance):
    """Call the learner's function and the reference on generated inputs; report the smallest failing case."""

    kind: Literal["function"]
    name: Name
    args: list[ArgSpec] = Field(min_length=1)
    dims: dict[str, Range] = Field(default_factory=dict, description="dimension name -> [low, high] (inclusive)")
    cases: int = Field(25, ge=1, le=100_000, description="how many cases, at most (time_budget may stop it sooner)")
    time_budget: float = Field(
        5.0,
        gt=0,
        le=600,
        description=(
            "seconds for making cases and running the reference and the learner's function on them, per world "
            "and split across devices; no further batch of cases starts after it (the first two cases always run)"
        ),
    )
    devices: list[InputDevice] = Field(
        default_factory=lambda: ["default", "meta"],
        description=(
            "devices to generate inputs on; 'default' is the learner's device; unavailable ones are skipped, "
            "and a function given no tensors runs on the first only"
        ),
    )
    compare: list[TensorProperty] = Field(default_factory=lambda: ["shape", "dtype", "device", "values"], min_length=1)
    broadcast: bool = Field(
        False, description="compare values after broadcasting (otherwise values of different shapes never match)"
    )
    seed: int = 0
    distinct_dims: bool = Field(
        False, description="give the named dimensions different sizes in every case (a swapped axis then shows)"
    )
    reference: Name | None = Field(
        None, description="the oracle: a function defined in setup, instead of the solution's function of this name"
    )
    property: Expr | None = Field(
        None,
        description=(
            "an expression that must be true in every case, over the arguments (by name, after the call) and "
            "result (what the function returned); with it, results are compared with a reference only when "
            "reference is given"
        ),
    )
    mutates: list[Name] = Field(
        default_factory=list,
        description=(
            "arguments the function is meant to change in place (output arguments): compared with the "
            "reference's after the call; every other tensor argument must come back unchanged (values and "
            "version counter)"
        ),
    )
    strict_types: bool = Field(
        False,
        description=(
            "results must have the reference's type: a list is not a tuple, a tuple or list is not a tensor "
            "(by default equal values of these types match)"
        ),
    )

    @model_validator(mode="after")
    def _property_names(self) -> FunctionCheck:
        if self.property is not None and self.reference is None and any(a.name is None for a in self.args):
            raise ValueError("a property check without a reference names every argument (name: on each of args)")
        return self


class PythonCheck(_Check):
    """The escape hatch: statements (usually asserts) run against the learner's namespace.

    ``ref`` names the reference namespace as an object (``ref.t``)."""

    kind: Literal["python"]
    code: Code = Field(min_length=1)
    message: str | None = Field(
        None, description="what the learner is told when the block fails (the failing assert and its values follow)"
    )


MODULE_NAME = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"


class PytestCheck(_Check):
    """An outside course's pytest file (hypothesis allowed), run as it is against the
    learner's code imported as ``module``; each test is reported as a check of its own."""

    kind: Literal["pytest"]
    code: Code = Field(
        min_length=1, description="the test file, usually the name of a .py file beside the YAML (test_engine.py)"
    )
    module: str = Field(
        pattern=MODULE_NAME,
        max_length=200,
        description="the module the learner's code is imported as by the tests, e.g. micrograd.engine",
    )
    timeout: float = Field(
        10.0, gt=0, le=600, description="seconds of CPU time each test may take before it is stopped and fails"
    )


class SourceCheck(_Check):
    """Rules on the learner's source, read with ``ast`` (nothing runs).

    Each entry of ``forbid``/``require`` is one of: a dotted name used anywhere (``torch.stack``,
    ``np``; a call, an attribute chain or a plain name), an attribute or method written
    ``.item``, a write into an element of a name (``a[]=``: ``a[1, 0] = 9``, ``a[0] += 1``, into a
    view made from it in the same expression: ``a.t()[0, 1] = 9``, ``a[1, 0].fill_(9)``, or into a
    name bound to a view of it: ``u = a.T`` then ``u[0, 1] = 9``, except the names in ``through``), a
    construct (``for``, ``while``, ``lambda``, ``import``, ``comprehension``), or a literal in
    quotes (``"'cuda'"``, ``"'float64'"``, ``"3.14"``)."""

    kind: Literal["source"]
    forbid: list[str] = Field(default_factory=list, description="what the code must not use")
    require: list[str] = Field(default_factory=list, description="what the code must use")
    through: list[str] = Field(
        default_factory=list,
        description="names of views the code may write through: with ['t'], 't = a.t()' then 't[0, 1] = 9' is not a write rule's 'a[]='",
    )
    max_lines: int | None = Field(None, ge=1, description="at most this many non-blank, non-comment lines")
    max_statements: int | None = Field(None, ge=1, description="at most this many statements (nested ones count)")
    applies_to: Literal["learner", "both"] = Field(
        "both",
        description="'learner': the reference solution is exempt (a loop reference with one-line rules for learners)",
    )


Check = Annotated[
    SourceCheck
    | ValueCheck
    | TensorCheck
    | RaisesCheck
    | ModuleCheck
    | StateDictCheck
    | SameAsSolutionCheck
    | FunctionCheck
    | PythonCheck
    | PytestCheck,
    Field(discriminator="kind"),
]


def _by_tag(union: Any, tag: str) -> dict[str, type[Strict]]:
    """The models of a discriminated union by their tag, in the union's order: the one list
    of check kinds (card types) that the loader, the schema and the docs derive from."""
    members = get_args(get_args(union)[0])
    return {get_args(model.model_fields[tag].annotation)[0]: model for model in members}


CHECK_MODELS = _by_tag(Check, "kind")
CHECK_KINDS = tuple(CHECK_MODELS)


class Mistake(Strict):
    """A known mistake and the message it earns; when one matches, its message leads the feedback.

    Exactly one of: ``when`` (expression true in the learner namespace after the run),
    ``code`` (a known-wrong solution, matched ignoring comments and formatting), or
    ``failed_check`` (the id of a check that failed)."""

    when: Expr | None = None
    code: Code | None = None
    failed_check: Id | None = None
    message: str = Field(min_length=1)
    id: Id | None = Field(
        None, description="names this mistake in verdicts and class reports (default: a hash of its message)"
    )

    @property
    def stable_id(self) -> str:
        """The id a verdict and a class report know this mistake by: rewording the message of
        a mistake without an ``id`` gives it a new one."""
        return self.id or "m-" + hashlib.sha256(self.message.encode("utf-8")).hexdigest()[:10]

    @model_validator(mode="after")
    def _exactly_one(self) -> Mistake:
        given = [k for k in ("when", "code", "failed_check") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a mistake needs exactly one of when, code or failed_check")
        return self


class WrongSolution(Strict):
    """Code that must fail (``pack test`` proves it); ``expect`` must appear in its feedback and
    ``expect_not`` must not: a cause that does not hold for this code (an authored mistake whose
    ``when`` is meant for another bug) is proven silent here."""

    code: Code = Field(min_length=1)
    expect: str | None = Field(None, description="text the feedback must contain, e.g. the mistake's message")
    expect_not: str | None = Field(
        None, min_length=1, description="text the feedback must not contain, e.g. a mistake meant for another bug"
    )
    why: str | None = Field(None, description="what the mistake is, for authors")


class EquivalentMutant(Strict):
    """A mutant of the reference solution that behaves exactly like it, so no check can kill it."""

    mutant: str = Field(
        min_length=1, description="the mutant's id as pack test prints it (drop-1a2b3c4d), or text its diff contains"
    )
    reason: str = Field(min_length=1, description="why it behaves like the reference (for reviewers)")


class Exercise(Strict):
    id: Id
    title: str = Field(min_length=1)
    prompt: Markdown = Field(min_length=1)
    setup: Code = ""
    setup_visible: bool = Field(False, description="show the setup code to the learner above the editor")
    # how much of the setup's head is a lesson prelude shown to nobody (Lesson.prelude_visible)
    _hidden_head: int = PrivateAttr(0)
    judge_setup: Code = Field(
        "",
        description="code only the judge runs, after setup (and a world's variant), before the reference solution: "
        "expected values, an oracle, helpers that compute them; checks, mistakes and expected expressions read its "
        "names, the learner's kernel never has them",
    )
    starter: Code = ""
    solution: Code = Field(min_length=1)
    checks: list[Check] = Field(min_length=1)
    hints: list[Markdown] = Field(default_factory=list)
    mistakes: list[Mistake] = Field(default_factory=list)
    wrong_solutions: list[WrongSolution] = Field(default_factory=list)
    accepted_solutions: list[Code] = Field(
        default_factory=list, description="other correct code, each proven by `pack test` to pass every check"
    )
    equivalent_mutants: list[EquivalentMutant] = Field(
        default_factory=list,
        description="mutants of the solution that behave like it: pack test does not count them as weak checks",
    )
    time_limit: float = Field(
        20.0,
        gt=0,
        le=600,
        description="seconds of the kernel's CPU time (per thread) for setup, the reference solution, the learner's "
        "code, the checks and the device run, under a wall-clock ceiling 3x as long (at least 60 s more); kernel "
        "start and warm-up are not counted",
    )
    seed: int = Field(0, description="torch, numpy and random are seeded with this before setup")
    threads: int = Field(
        1,
        ge=1,
        le=64,
        description="torch threads for the check's kernel; time_limit counts the kernel's CPU time per thread, "
        "so a busy machine does not use it up",
    )
    device_run: bool | None = Field(
        None,
        description="after a pass on the CPU, run the code again with DEVICE set to the meta device, so tensors "
        "left on the CPU fail as on a GPU; default: on when setup or prompt uses DEVICE",
    )
    variants: list[Code] = Field(
        default_factory=list,
        description="code run after setup in a further world each (other sizes and values: rebind the setup's "
        "names); without variants, one further world runs setup again with another seed",
    )
    second_world: bool = Field(
        True,
        description="after a pass, verify again on other data (see variants); false needs second_world_reason",
    )
    second_world_reason: str | None = Field(
        None, description="why this exercise's checks hold for its own data only (with second_world: false)"
    )

    @model_validator(mode="after")
    def _second_world_explained(self) -> Exercise:
        if not self.second_world and not (self.second_world_reason or "").strip():
            raise ValueError("second_world: false needs second_world_reason (why other data cannot be checked)")
        if not self.second_world and self.variants:
            raise ValueError("variants are the second world's data: drop them or set second_world: true")
        return self

    @property
    def shown_setup(self) -> str:
        """The setup as a learner reads it (setup_visible): without a prelude the lesson hides."""
        return self.setup[self._hidden_head :].lstrip("\n")

    def worlds(self) -> list[dict]:
        """The further worlds a pass must hold in: a seed each, and the variant's code."""
        if not self.second_world:
            return []
        variants = self.variants or [""]
        return [{"seed": self.seed + n, "variant": code} for n, code in enumerate(variants, 1)]

    @property
    def learner_module(self) -> str | None:
        """The module name the learner's code runs as (its pytest checks import it), or None."""
        return next((c.module for c in self.checks if isinstance(c, PytestCheck)), None)

    @property
    def setup_reads(self) -> list[str]:
        """The names the checks and mistakes read as the setup bound them (``_setup.w``): the
        learner's kernel keeps those bindings for the judge (tutor/checks/setupnames.py)."""
        return setupnames.reads([[c.model_dump() for c in self.checks], [mk.model_dump() for mk in self.mistakes]])

    @property
    def follows_device(self) -> bool:
        """Whether the exercise's results follow DEVICE (see device_run)."""
        if self.device_run is not None:
            return self.device_run
        return "DEVICE" in self.setup or "DEVICE" in self.prompt


def every_check_hidden(exercise: Exercise) -> Exercise:
    """The exercise under the policy ``hidden_checks: all``: every check that does not say
    ``hidden: false`` or ``visibility: visible`` is hidden."""
    if all(c.hidden is not None or c.visibility is not None for c in exercise.checks):
        return exercise
    checks = [
        c.model_copy(update={"hidden": True}) if c.hidden is None and c.visibility is None else c
        for c in exercise.checks
    ]
    return exercise.model_copy(update={"checks": checks})


def every_check_shown(exercise: Exercise) -> Exercise:
    """The exercise with its hidden checks described in full: what ``pack test`` and ``grade``
    decide with (``grade`` conceals each learner's verdict when it writes it)."""
    if not any(c.is_hidden for c in exercise.checks):
        return exercise
    checks = [c.model_copy(update={"hidden": False, "visibility": None}) if c.is_hidden else c for c in exercise.checks]
    return exercise.model_copy(update={"checks": checks})


# ---------------------------------------------------------------- recall cards


class _Card(Strict):
    id: Id
    prompt: Markdown = Field(min_length=1)
    explanation: Markdown | None = Field(None, description="shown after the answer, right or wrong")
    teaches: str | None = Field(None, description="heading of the intuition section that teaches this (for leeches)")


class _Probed(Strict):
    probe: Expr | None = Field(
        None,
        description="a Python expression that pack test evaluates in a fresh kernel (after the lesson's prelude) "
        "and grades as an answer to the card: the key must still be what torch gives",
    )


class ChoiceOption(Strict):
    text: str = Field(min_length=1)
    correct: bool = False
    feedback: str = Field(min_length=1, description="shown when the learner picks this option")


class ChoiceCard(_Probed, _Card):
    type: Literal["choice"]
    options: list[ChoiceOption] = Field(min_length=2, max_length=9)

    @model_validator(mode="after")
    def _one_correct(self) -> ChoiceCard:
        if sum(o.correct for o in self.options) != 1:
            raise ValueError("a choice card needs exactly one option with correct: true")
        return self


class ShortCard(_Probed, _Card):
    type: Literal["short"]
    answers: list[str] = Field(default_factory=list, description="accepted answers (normalised before comparing)")
    regex: str | None = Field(None, description="a full-match regular expression also accepted")
    case_sensitive: bool = False

    @model_validator(mode="after")
    def _some_answer(self) -> ShortCard:
        if not self.answers and not self.regex:
            raise ValueError("a short card needs answers or a regex")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"regex is not a valid regular expression: {exc}") from None
        return self


class NumericCard(_Probed, _Card):
    type: Literal["numeric"]
    answer: float
    tolerance: float = Field(0.0, ge=0, description="absolute tolerance")
    rel_tolerance: float = Field(0.0, ge=0, description="relative tolerance")


class PredictCard(_Card):
    """Predict what the code prints (its last expression's repr counts), or the exception it raises."""

    type: Literal["predict"]
    code: Code = Field(min_length=1)
    expected: str = Field(
        description="the key: the output as torch prints it, or the exception class name if it raises; "
        "pack test fails when it no longer matches"
    )
    accept: list[str] = Field(default_factory=list, description="other accepted answers")


CLOZE_BLANK = re.compile(r"\{\{(.+?)\}\}")


class ClozeCard(_Probed, _Card):
    """``text`` with blanks written ``{{answer}}`` or ``{{answer|alternative}}``."""

    type: Literal["cloze"]
    text: str = Field(min_length=1)
    unordered: bool = Field(
        False,
        description="the blanks are a list whose order does not matter: any order of the answers is right",
    )

    @field_validator("text")
    @classmethod
    def _has_blank(cls, v: str) -> str:
        if not CLOZE_BLANK.search(v):
            raise ValueError("cloze text needs at least one {{blank}}")
        return v

    @model_validator(mode="after")
    def _unordered_needs_a_list(self) -> ClozeCard:
        if self.unordered and len(CLOZE_BLANK.findall(self.text)) < 2:
            raise ValueError("unordered: true needs two or more {{blanks}} (their order is what it frees)")
        return self


Card = Annotated[ChoiceCard | ShortCard | NumericCard | PredictCard | ClozeCard, Field(discriminator="type")]
CARD_MODELS = _by_tag(Card, "type")
CARD_TYPES = tuple(CARD_MODELS)


# ---------------------------------------------------------------- lessons and packs


class Lesson(Strict):
    """``LESSON/lesson.yaml``."""

    id: Id
    title: str = Field(min_length=1)
    summary: str = ""
    intuition: Markdown = Field(min_length=1, description="why, with an analogy, then the precise contract")
    prelude: Code = Field(
        "",
        description="code every exercise's setup starts with (imports, data, helpers); it runs in the same "
        "namespace as the setup, the reference solution and the learner's code",
    )
    prelude_visible: bool = Field(
        True,
        description="show the prelude with an exercise's visible setup; false for code the checks need and a "
        "learner need not read (a record of what backward() did, layers that note what they saw)",
    )
    torch: str = Field(
        "",
        description="the torch releases the lesson needs, as a version specifier (e.g. '>=2.4'); where the "
        "installed torch is outside it, pack test skips the lesson with the reason and check refuses it",
    )
    exercises: list[Exercise] = Field(default_factory=list)
    cards: list[Card] = Field(default_factory=list)

    @field_validator("torch")
    @classmethod
    def _torch_specifier(cls, value: str) -> str:
        from tutor.packs.torchneed import parse

        if value.strip():
            parse(value)
        return value.strip()

    @model_validator(mode="after")
    def _prelude_first(self) -> Lesson:
        # The prelude becomes the head of every exercise's setup: one namespace, one run.
        # (Checked first so a lesson validated again from its own dump is not prefixed twice.)
        if self.prelude.strip():
            head = self.prelude.rstrip("\n") + "\n"
            for ex in self.exercises:
                if not ex.setup.startswith(head):
                    ex.setup = head + ("\n" + ex.setup if ex.setup else "")
                ex._hidden_head = 0 if self.prelude_visible else len(head)
        return self


class PackManifest(Strict):
    """``pack.yaml``."""

    id: Id
    title: str = Field(min_length=1)
    version: str = Field(pattern=r"^\d+(\.\d+)*([.-]?[A-Za-z0-9]+)*$")
    authors: list[str] = Field(default_factory=list)
    description: str = ""
    torch: str = Field(">=2.2", description="torch version range, e.g. '>=2.2'")
    lessons: list[Id] = Field(min_length=1, description="lesson folder names, in teaching order")
    language: str = Field(
        "en",
        pattern=r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$",
        description="the language of the pack's texts, a tag such as 'en', 'de' or 'pt-BR'",
    )
    hidden_checks: Literal["marked", "all"] = Field(
        "marked",
        description="which checks are hidden: 'marked' (those with hidden: true or a visibility that hides them) or "
        "'all' (every check that does not say hidden: false or visibility: visible)",
    )
    translates: Id | None = Field(
        None,
        description="the id of the pack this one translates: the same lesson, exercise and card ids, other "
        "texts; offered instead of that pack when the learner's language setting is this pack's language",
    )

    @field_validator("torch")
    @classmethod
    def _specifier(cls, v: str) -> str:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            SpecifierSet(v)
        except InvalidSpecifier:
            raise ValueError(f"not a version range such as '>=2.2': {v!r}") from None
        return v
