"""Two domains, two models: hand-made recordings for `ledgeragent audit` and the console's `--recorded ... --at`.

Every result is real: each script runs against the domain's backend over its seed data without any gate
(tests/support/recorded.py), and the files are tau2-bench results files with a reward per simulation. The agent
describes each write and the customer says yes before it, so the explicit confirmation the policies ask for is
given; what the gate would have said of each write (audited with the seed data as the database):

retail, model `gpt-4.1` (`retail.json`):
- simulations[0], reward 1: Mia's T-shirt swapped (ALLOW: the gate reads the product itself), then her order's
  address changed after its items were modified: BLOCK, `retail.items_modified_once`, a written-policy violation
  the benchmark rewarded;
- simulations[1], reward 0: the swap alone, ALLOW.

airline, model `qwen2.5:7b` (`airline.json`):
- simulations[0], reward 1: Julia's UX789J cancelled outside the 24-hour window, uninsured: BLOCK,
  `airline.cancel_basis`, rewarded;
- simulations[1], reward 1: Theo's TB5N1W, booked this morning, cancelled: ALLOW;
- simulations[2], reward 0: TB5N1W cancelled for a customer who was never identified: breaks a rule,
  `airline.customer_identified`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mock_backends.registry import open_backend
from tests.support.recorded import ADDRESS, MIA, SWAP, Exchange, call, record_on_seed, say, tau2_results

YES = say("Yes, please go ahead.", "user")

RETAIL_SWAP = [*MIA, say("I will swap item 2000000021 of order #W4821002 for 2000000022, paid with "
                         "credit_card_4821002. Shall I proceed?"), YES, SWAP]
RETAIL_SWAP_THEN_ADDRESS = [*RETAIL_SWAP, say("Done. Anything else?"), say("Ship it to 1 Main St instead.", "user"),
                            say("I will change the address of #W4821002 to 1 Main St, Springfield, IN 46281, USA. "
                                "Shall I proceed?"), YES, ADDRESS]

AIRLINE_OUTSIDE_WINDOW = [say("Hi, I'm julia_reyes_4521. Please cancel my reservation UX789J.", "user"),
                          call("get_user_details", user_id="julia_reyes_4521"),
                          call("get_reservation_details", reservation_id="UX789J"),
                          say("I will cancel reservation UX789J (ORD to SEA on 2024-05-17). Shall I proceed?"), YES,
                          call("cancel_reservation", reservation_id="UX789J")]
AIRLINE_INSIDE_WINDOW = [say("Hello, I'm theo_brennan_3391. Cancel TB5N1W, I booked it this morning.", "user"),
                         call("get_user_details", user_id="theo_brennan_3391"),
                         call("get_reservation_details", reservation_id="TB5N1W"),
                         say("I will cancel reservation TB5N1W with a full refund. Shall I proceed?"), YES,
                         call("cancel_reservation", reservation_id="TB5N1W")]
AIRLINE_NOBODY = [say("Please cancel TB5N1W.", "user"),
                  say("I will cancel reservation TB5N1W. Shall I proceed?"), YES,
                  call("cancel_reservation", reservation_id="TB5N1W")]

RETAIL_MODEL, AIRLINE_MODEL = "gpt-4.1", "qwen2.5:7b"


@dataclass(frozen=True)
class Recordings:
    retail: Path
    airline: Path
    retail_db: Path  # the seed data as a session .sqlite (what `--db` takes; matched to retail by its tables)
    airline_db: Path


def tau2_file(domain: str, conversations: Sequence[Sequence[Exchange]], rewards: Sequence[float],
              model: str) -> dict[str, Any]:
    """`tau2_results` with each simulation's `reward_info.reward`, as tau2 records it."""
    document = tau2_results(domain, conversations, model=model)
    for simulation, reward in zip(document["simulations"], rewards, strict=True):
        simulation["reward_info"] = {"reward": reward, "db_check": None, "action_checks": None,
                                     "reward_basis": ["DB"], "reward_breakdown": {"DB": reward}, "info": None}
    return document


async def recorded(domain: str, folder: Path, scripts: Sequence[Sequence[Exchange]]) -> list[list[Exchange]]:
    made = []
    for n, script in enumerate(scripts):
        made.append(await record_on_seed(domain, folder / f"{domain}-recording-{n}.sqlite", script))
    return made


async def seed_database(domain: str, path: Path) -> Path:
    backend = await open_backend(domain, path)
    await backend.close()
    return path


async def write_recordings(folder: Path) -> Recordings:
    """The two files and the two seed databases in `folder` (see the module docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    scratch = folder / "recording-dbs"
    scratch.mkdir(exist_ok=True)
    retail = folder / "retail.json"
    retail.write_text(json.dumps(tau2_file("retail", await recorded("retail", scratch, [
        RETAIL_SWAP_THEN_ADDRESS, RETAIL_SWAP]), [1.0, 0.0], RETAIL_MODEL), indent=1), encoding="utf-8")
    airline = folder / "airline.json"
    airline.write_text(json.dumps(tau2_file("airline", await recorded("airline", scratch, [
        AIRLINE_OUTSIDE_WINDOW, AIRLINE_INSIDE_WINDOW, AIRLINE_NOBODY]), [1.0, 1.0, 0.0], AIRLINE_MODEL), indent=1),
        encoding="utf-8")
    return Recordings(retail, airline, await seed_database("retail", folder / "retail.sqlite"),
                      await seed_database("airline", folder / "airline.sqlite"))


def tau_bench_list(conversations: Sequence[Sequence[Exchange]], rewards: Sequence[float]) -> list[dict[str, Any]]:
    """A tau-bench / tau-Trait results list: one `{task_id, reward, info, traj, trial}` per conversation, its OpenAI
    messages under `traj` (no model named anywhere: tau-bench keeps it out of the file)."""
    from tests.support.recorded import openai_messages

    return [{"task_id": n, "reward": reward, "info": {}, "traj": openai_messages(c), "trial": 0}
            for n, (c, reward) in enumerate(zip(conversations, rewards, strict=True))]
