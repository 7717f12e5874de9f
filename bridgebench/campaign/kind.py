"""The interface every kind of campaign implements (timing.py, load.py), and the engine (engine.py) calls.

A kind says what differs: the options it takes, how it plans its process executions, how it checks that
every mechanism gives the same answer, how it runs one planned execution into one Execution the store
keeps, how it says one finished execution in a line, and how its results are analysed and reported. The
engine does all the rest the same way for every kind: creating and claiming a campaign, resuming it, the
run state, the adaptive rounds, storing each execution as it ends, and interrupts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from bridgebench.build import BuildResult
from bridgebench.options import Options
from bridgebench.runner import Execution, Task
from bridgebench.store import Store
from bridgebench.study import Study

if TYPE_CHECKING:
    from bridgebench.campaign.adaptive import Judge


class CampaignError(Exception):
    """A campaign that cannot start or resume; one line, ready to print."""


@dataclass(frozen=True)
class CheckRow:
    benchmark: str
    mechanism: str
    status: str  # "agrees", "disagrees", "failed"
    answer: str | None
    detail: str
    batch: int | None = None  # calls per iteration the probe chose; timed runs reuse it
    iterations: int | None = None  # iterations a timed run makes, when the budget sizes them to a time
    stepped: bool | None = None  # its probe speaks the stepped mode (timing/stepped.py); None: not asked


Execute = Callable[[Task], Execution]  # one planned execution, run: what the store keeps of it
Renderer = Callable[[Any, Store], str]  # a result (and its store, for what reads iterations) as a file's text


class Kind(Protocol):
    name: str  # as the campaign's config stores it (config.TIMING, config.LOAD)
    command: str  # the bridgebench command that runs and resumes it
    noun: str  # what the campaign is called in messages ("campaign", "load campaign")
    unit: str  # what one stored execution is called in messages, plural ("process executions", "load runs")
    formats: Mapping[str, Renderer]  # the report formats `bridgebench report --format` offers
    written_after_a_run: Mapping[str, str]  # format -> file suffix, written after each run

    def plan(self, study: Study, options: Options, available: list[str]) -> list[Task]:
        """Every planned process execution, in the order they run."""

    def check(self, study: Study, builds: dict[str, BuildResult], options: Options,
              on_row: Callable[[CheckRow], None] | None = None) -> list[CheckRow]:
        """Every available mechanism once on the check input: do they give the same answer?"""

    def check_lines(self, study: Study, options: Options) -> tuple[str, str]:
        """What the check is doing, and what it found when every answer agreed (one line each)."""

    def executor(self, store: Store, study: Study, campaign_id: int, options: Options,
                 builds: dict[str, BuildResult]) -> AbstractContextManager[Execute]:
        """What runs one planned execution, with whatever the kind holds while a campaign runs."""

    def summary(self, run: Execution) -> str:
        """One line about one finished execution (the progress display)."""

    def analyse(self, store: Store, campaign_id: int, *, seed: int | None = None,
                exclude_disturbed: bool = False) -> Any:
        """The campaign's results, computed from the store (and cached there where the kind caches)."""

    def current(self, store: Store, campaign_id: int, exclude_disturbed: bool = False) -> Any:
        """The results as last computed, computed again only if they are stale."""

    def show(self, result: Any, console: Any, wide: bool = False) -> None:
        """The results on the terminal (a rich Console; `wide`: every table whole, where the kind would
        otherwise leave what does not fit to the report files). A result has to_json() too."""

    def failed(self, result: Any) -> str | None:
        """One line when some executions failed (recorded, the campaign went on), else None."""

    def judge(self, store: Store, campaign_id: int, options: Options) -> Judge | None:
        """An adaptive budget's rule for a round of this kind (None: a timing campaign's, adaptive.py)."""

    def replacements(self, store: Store, study: Study, campaign_id: int, options: Options) -> list[Task]:
        """A fixed budget's executions to run after its plan, planned now (none: the plan was all)."""
