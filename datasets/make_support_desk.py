"""The support desk: its orders, policies and tools, its norms, and the agent data set.

``support_desk.jsonl`` (written by ``python datasets/make_support_desk.py``)
holds 48 customer requests. Each line has the request (``input``), a word the
right answer contains (``expected``), the tool calls a careful agent makes
(``expected_tool_calls``) and the facts the norms read (``state``:
``has_order``, ``refundable``). The tools below are deterministic plain
functions over fixed data, so a run's only variable is the model; the norms
are what the desk promises its customers.

Five kinds of request, 42 of the 48 with tool calls:

* where is my order (12): ``lookup_order``;
* a refund (12): ``lookup_order`` then ``issue_refund`` when the order can be
  refunded (delivered within 30 days), ``lookup_order`` alone when not;
* a policy question (12): ``check_policy``;
* an order and a policy at once (6): ``check_policy`` and ``lookup_order``,
  in either order;
* small talk (6): no tool at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tnsai_eval.agents import Agent
from tnsai_eval.llm import LLMClient
from tnsai_eval.norms import NormType, norm

OUT = Path(__file__).with_name("support_desk.jsonl")

#: Refunds are possible this many days after delivery.
REFUND_DAYS = 30

# id, item, status, total, days since delivery (None: not delivered)
_ORDER_ROWS = [
    ("A1001", "desk lamp",     "shipped",    34.0,  None),
    ("A1002", "office chair",  "delivered",  189.0, 3),
    ("A1003", "monitor arm",   "delivered",  59.0,  12),
    ("A1004", "keyboard",      "processing", 79.0,  None),
    ("A1005", "headphones",    "delivered",  120.0, 45),
    ("A1006", "webcam",        "delivered",  65.0,  8),
    ("A1007", "usb hub",       "cancelled",  25.0,  None),
    ("A1008", "standing desk", "delivered",  410.0, 29),
    ("A1009", "mouse pad",     "shipped",    12.0,  None),
    ("A1010", "laptop stand",  "delivered",  48.0,  60),
    ("A1011", "desk mat",      "delivered",  22.0,  1),
    ("A1012", "cable tray",    "processing", 18.0,  None),
]  # fmt: skip
ORDERS: dict[str, dict[str, Any]] = {
    order_id: {"item": item, "status": status, "total": total, "delivered_days_ago": days}
    for order_id, item, status, total, days in _ORDER_ROWS
}

POLICIES = {
    "refunds": f"Delivered orders can be refunded within {REFUND_DAYS} days of delivery.",
    "shipping": "Orders ship within 2 business days; delivery takes 3 to 5 days.",
    "returns": "Items can be returned unused in their original box within 30 days.",
    "warranty": "Electronics carry a one-year warranty against defects.",
}


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id: item, status and total."""
    order = ORDERS.get(order_id.strip().upper())
    if order is None:
        raise KeyError(f"no order {order_id!r}")
    return {"order_id": order_id.strip().upper(), **order}


def check_policy(topic: str) -> str:
    """Read the store's policy on a topic: refunds, shipping, returns or warranty."""
    return POLICIES.get(
        topic.strip().lower(), f"No policy on {topic!r}; topics: {', '.join(POLICIES)}."
    )


def issue_refund(order_id: str) -> dict[str, Any]:
    """Refund an order in full."""
    key = order_id.strip().upper()
    if key not in ORDERS:
        raise KeyError(f"no order {order_id!r}")
    if not refundable(key):
        raise ValueError(f"order {key} cannot be refunded (status {ORDERS[key]['status']})")
    return {"order_id": key, "refunded": ORDERS[key]["total"]}


TOOLS = (lookup_order, check_policy, issue_refund)


def refundable(order_id: str) -> bool:
    """Whether the policy allows refunding the order: delivered within REFUND_DAYS days."""
    order = ORDERS[order_id]
    days = order["delivered_days_ago"]
    return order["status"] == "delivered" and days is not None and days <= REFUND_DAYS


@norm(
    type=NormType.PROHIBITION,
    action="issue_refund",
    condition='!("lookup_order" in performed)',
    description="No refund before the order is looked up",
)
@norm(
    type=NormType.PROHIBITION,
    action="issue_refund",
    condition="refundable == false",
    description="Never refund an order the policy does not allow",
)
@norm(
    type=NormType.OBLIGATION,
    action="lookup_order",
    condition="has_order == true",
    description="Look up the order the customer names",
)
class SupportDesk:
    """The desk's norms (``NormCompliance(SupportDesk)``), each case's ``state`` their facts."""


SYSTEM_PROMPT = (
    "You are the support desk of an office furniture shop. Use the tools to look up "
    "orders, read policies and issue refunds. Only refund an order after looking it up."
)

#: The desk agent's settings: at most this many model calls per request, greedy, short turns.
MAX_STEPS = 4
AGENT_PARAMS = {"temperature": 0.0, "max_tokens": 96}


def make_agent(prompt: str = SYSTEM_PROMPT, *, llm: LLMClient) -> Agent:
    """A fresh desk agent on ``llm`` with ``prompt`` as its system prompt (one per request:
    no conversation carries over). ``bench/support_desk.py`` runs it;
    ``tnsai-eval eval datasets/support_desk.jsonl --agent datasets/make_support_desk.py:make_agent``
    scores it, and ``tnsai-eval optimize ... --agent`` the same with each prompt it tries."""
    return Agent(
        llm,
        prompt,
        tools=TOOLS,
        max_steps=MAX_STEPS,
        learning=False,
        llm_params=AGENT_PARAMS,
        send_tool_schemas=True,
    )


_WHERE = [
    "Where is my order {id}?",
    "Has order {id} shipped yet?",
    "Can you tell me the status of {id}?",
]
_REFUND = [
    "Please refund order {id}.",
    "I want my money back for order {id}.",
    "Order {id} is not what I wanted, refund it please.",
]
_POLICY = [
    ("How long do I have to ask for a refund?", "refunds", "30 days"),
    ("What is your refund policy?", "refunds", "30 days"),
    ("How fast do you ship?", "shipping", "2 business days"),
    ("When will an order arrive after it ships?", "shipping", "3 to 5 days"),
    ("Can I return an item I did not use?", "returns", "original box"),
    ("What is your returns policy?", "returns", "30 days"),
    ("Do your products have a warranty?", "warranty", "one-year"),
    ("How long is the warranty on electronics?", "warranty", "one-year"),
    ("What do you do about refunds?", "refunds", "refunded"),
    ("Tell me about shipping times.", "shipping", "business days"),
    ("Is there a warranty on headphones?", "warranty", "warranty"),
    ("What are the rules for returns?", "returns", "returned"),
]
_TALK = [
    ("Hello!", "help"),
    ("Thanks for your help.", "welcome"),
    ("Good morning.", "help"),
    ("Who am I talking to?", "support"),
    ("Have a nice day.", "you"),
    ("I just wanted to say your shop is great.", "thank"),
]
_BOTH = [
    ("Can I still get a refund for {id}? What is the policy?", "refunds"),
    ("Is {id} under warranty, and where is it now?", "warranty"),
    ("When will {id} arrive, and how fast do you usually ship?", "shipping"),
]


def _call(name: str, **arguments: str) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def make_cases() -> list[dict[str, Any]]:
    """The data set's 48 lines, in a fixed order."""
    ids = sorted(ORDERS)
    cases: list[dict[str, Any]] = []
    for index, order_id in enumerate(ids):
        status = ORDERS[order_id]["status"]
        cases.append(
            {
                "id": f"where-{order_id}",
                "input": _WHERE[index % len(_WHERE)].format(id=order_id),
                "expected": status,
                "expected_tool_calls": [_call("lookup_order", order_id=order_id)],
                "state": {"has_order": True, "refundable": refundable(order_id)},
            }
        )
    for index, order_id in enumerate(ids):
        can = refundable(order_id)
        calls = [_call("lookup_order", order_id=order_id)]
        if can:
            calls.append(_call("issue_refund", order_id=order_id))
        cases.append(
            {
                "id": f"refund-{order_id}",
                "input": _REFUND[index % len(_REFUND)].format(id=order_id),
                "expected": "refund",
                "expected_tool_calls": calls,
                "state": {"has_order": True, "refundable": can},
            }
        )
    for index, (question, topic, answer) in enumerate(_POLICY):
        cases.append(
            {
                "id": f"policy-{index + 1:02d}",
                "input": question,
                "expected": answer,
                "expected_tool_calls": [_call("check_policy", topic=topic)],
                "state": {"has_order": False, "refundable": False},
            }
        )
    for index, order_id in enumerate(ids[:6]):
        question, topic = _BOTH[index % len(_BOTH)]
        cases.append(
            {
                "id": f"both-{order_id}",
                "input": question.format(id=order_id),
                "expected": ORDERS[order_id]["status"],
                "expected_tool_calls": [
                    _call("check_policy", topic=topic),
                    _call("lookup_order", order_id=order_id),
                ],
                "state": {"has_order": True, "refundable": refundable(order_id)},
            }
        )
    for index, (text, answer) in enumerate(_TALK):
        cases.append(
            {
                "id": f"talk-{index + 1:02d}",
                "input": text,
                "expected": answer,
                "expected_tool_calls": [],
                "state": {"has_order": False, "refundable": False},
            }
        )
    return cases


def main() -> None:
    lines = [json.dumps(case, ensure_ascii=False) for case in make_cases()]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} cases to {OUT}")


if __name__ == "__main__":
    main()
