"""Static snapshots of saved widget state, for notebook viewers without a kernel.

A notebook executed with its widget state saved (the
``application/vnd.jupyter.widget-state+json`` notebook metadata) still shows
nothing where a widget was in a viewer that cannot run the widget's
JavaScript: GitHub, JupyterLab before a kernel starts, an HTML page offline.
``add_static_snapshots`` puts, after each widget output of a notebook, an
HTML rendering of what the widget showed, made from that saved state alone.
Running the cell again replaces the outputs, so a live session shows only the
live widget. ``normalize_widget_ids`` renames the random model ids so that
re-executing an unchanged notebook gives an unchanged file.

Only the widget kinds the tnsai-eval views use are drawn in full (boxes, tabs,
HTML, images, progress bars, sliders, buttons, text inputs, choices); any
other is named in place.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SNAPSHOT_MARK", "add_static_snapshots", "normalize_widget_ids", "snapshot_html"]

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: The key in an output's metadata that marks a static snapshot (so it is replaced, not doubled).
SNAPSHOT_MARK = "tnsai_widget_snapshot"
_REF = re.compile(r"IPY_MODEL_([0-9a-f]{32})")
_BOXES = {"VBoxModel": "column", "HBoxModel": "row", "BoxModel": "row", "GridBoxModel": "row"}
_INPUT = "border: 1px solid #bbb; padding: 2px 6px; background: #fff; min-width: 8em"
_BUTTON = "border: 1px solid #bbb; border-radius: 2px; padding: 2px 10px; background: #eee"


def snapshot_html(widget_state: Mapping[str, Any], model_id: str) -> str:
    """Static HTML of the widget ``model_id`` as the saved ``widget_state`` describes it.

    ``widget_state`` is the notebook metadata's
    ``application/vnd.jupyter.widget-state+json`` value (its ``state`` maps
    model ids to models).

    >>> state = {"state": {"a" * 32: {"model_name": "HTMLModel", "state": {"value": "<b>hi</b>"}}}}
    >>> snapshot_html(state, "a" * 32)
    '<div><b>hi</b></div>'
    """
    models = widget_state.get("state", {})
    return _Renderer(models).render(model_id)


def add_static_snapshots(notebook: dict[str, Any]) -> int:
    """Put a static snapshot after each widget output of ``notebook``; returns how many.

    ``notebook`` is nbformat's JSON (a dict, changed in place) with its widget
    state saved. Snapshots added by an earlier call are replaced.
    """
    state = notebook.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE)
    added = 0
    for cell in notebook.get("cells", []):
        outputs = cell.get("outputs")
        if not outputs:
            continue
        kept = [o for o in outputs if not o.get("metadata", {}).get(SNAPSHOT_MARK)]
        new: list[dict[str, Any]] = []
        for output in kept:
            new.append(output)
            view = output.get("data", {}).get(WIDGET_VIEW)
            if not view or state is None or view.get("model_id") not in state.get("state", {}):
                continue
            body = snapshot_html(state, view["model_id"])
            new.append(
                {
                    "output_type": "display_data",
                    "metadata": {SNAPSHOT_MARK: True},
                    "data": {
                        "text/html": _frame(body),
                        "text/plain": "(a static snapshot of the widget above)",
                    },
                }
            )
            added += 1
        cell["outputs"] = new
    return added


def normalize_widget_ids(notebook: dict[str, Any], *, salt: str) -> int:
    """Rename the widget model ids of ``notebook`` to ids derived from ``salt`` and order.

    Ids are given in the order the widgets are reached from the outputs
    (cell by cell, then through the models' references), so the same
    notebook executed twice gets the same ids. Returns how many were renamed.
    """
    state = notebook.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE)
    if not state or not state.get("state"):
        return 0
    models: dict[str, Any] = state["state"]
    order: list[str] = []
    seen: set[str] = set()

    def visit(model_id: str) -> None:
        if model_id in seen or model_id not in models:
            return
        seen.add(model_id)
        order.append(model_id)
        inner = models[model_id].get("state", {})
        for key in sorted(inner):
            for ref in _REF.findall(json.dumps(inner[key])):
                visit(ref)

    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view and isinstance(view.get("model_id"), str):
                visit(view["model_id"])
    # Widgets no output shows (made but never displayed): from those no other
    # widget refers to, in an order of their contents with the ids left out.
    referred = {ref for m in models.values() for ref in _REF.findall(json.dumps(m))}
    roots = sorted(
        (m for m in models if m not in seen and m not in referred),
        key=lambda m: _REF.sub("IPY_MODEL_", json.dumps(models[m], sort_keys=True)),
    )
    for model_id in [*roots, *sorted(models)]:
        visit(model_id)
    renames = {
        old: hashlib.sha256(f"{salt}:{index}".encode()).hexdigest()[:32]
        for index, old in enumerate(order)
    }
    text = json.dumps(notebook)
    text = re.sub("|".join(map(re.escape, renames)), lambda m: renames[m.group(0)], text)
    notebook.clear()
    notebook.update(json.loads(text))
    return len(renames)


def _frame(body: str) -> str:
    return (
        '<div class="tnsai-widget-snapshot" '
        'style="border: 1px dashed #bbb; padding: 6px; margin: 2px 0">'
        '<div style="font-size: 11px; color: #666; margin-bottom: 4px">'
        "Static snapshot of the widget above, as it was when the notebook ran "
        "(run the notebook in Jupyter for the live widget).</div>"
        f"{body}</div>"
    )


class _Renderer:
    def __init__(self, models: Mapping[str, Any]) -> None:
        self.models = models

    def render(self, model_id: str) -> str:
        model = self.models.get(model_id)
        if model is None:
            return f"<i>(widget {html.escape(model_id[:8])} not saved)</i>"
        name = str(model.get("model_name", ""))
        state: dict[str, Any] = dict(model.get("state", {}))
        for buffer in model.get("buffers", ()):
            path = buffer.get("path") or []
            if path and buffer.get("encoding") == "base64":
                state[str(path[0])] = ("base64", buffer.get("data", ""))
        if name in _BOXES:
            return self._box(state, _BOXES[name])
        method = getattr(self, "_" + name.removesuffix("Model").lower(), None)
        return method(state) if method is not None else f"<i>({html.escape(name)})</i>"

    def _children(self, state: Mapping[str, Any]) -> list[str]:
        return [self.render(ref[len("IPY_MODEL_") :]) for ref in state.get("children", [])]

    def _box(self, state: Mapping[str, Any], direction: str) -> str:
        gap = "8px" if direction == "row" else "4px"
        style = f"display: flex; flex-direction: {direction}; flex-wrap: wrap; gap: {gap}"
        return f'<div style="{style}">{"".join(self._children(state))}</div>'

    def _tab(self, state: Mapping[str, Any]) -> str:
        children = self._children(state)
        titles = list(state.get("titles") or [])
        selected = state.get("selected_index")
        heads = []
        for index in range(len(children)):
            title = html.escape(str(titles[index] if index < len(titles) else index))
            weight = "bold; border-bottom: 2px solid #1976d2" if index == selected else "normal"
            heads.append(f'<span style="padding: 2px 8px; font-weight: {weight}">{title}</span>')
        shown = children[selected] if isinstance(selected, int) and selected < len(children) else ""
        bar = f'<div style="border-bottom: 1px solid #ccc">{"".join(heads)}</div>'
        return f"<div>{bar}{shown}</div>"

    def _html(self, state: Mapping[str, Any]) -> str:
        # The value of an HTML widget is HTML by contract: shown as such.
        return self._described(state, f"<div>{state.get('value', '')}</div>")

    def _label(self, state: Mapping[str, Any]) -> str:
        return f"<span>{html.escape(str(state.get('value', '')))}</span>"

    def _image(self, state: Mapping[str, Any]) -> str:
        value = state.get("value")
        if not (isinstance(value, tuple) and value[1]):
            return ""
        width = str(state.get("width") or "")
        size = f' width="{html.escape(width)}"' if width.isdigit() else ""
        kind = html.escape(str(state.get("format") or "png"))
        return (
            f'<img{size} style="max-width: 100%; height: auto" alt="figure" '
            f'src="data:image/{kind};base64,{value[1]}">'
        )

    def _intprogress(self, state: Mapping[str, Any]) -> str:
        low, high, value = (state.get(k, 0) for k in ("min", "max", "value"))
        bar = f'<progress value="{value - low}" max="{max(high - low, 1)}"></progress>'
        return self._described(state, f"{bar} <span>{value}/{high}</span>")

    _floatprogress = _intprogress

    def _intslider(self, state: Mapping[str, Any]) -> str:
        low, high, value = (state.get(k, 0) for k in ("min", "max", "value"))
        slider = (
            f'<input type="range" disabled min="{low}" max="{high}" value="{value}"> '
            f"<b>{value}</b> <span style='color: #666'>({low}–{high})</span>"
        )
        return self._described(state, slider)

    _floatslider = _intslider

    def _button(self, state: Mapping[str, Any]) -> str:
        text = html.escape(str(state.get("description", "")))
        return f'<span style="{_BUTTON}">{text}</span>'

    _togglebutton = _button

    def _text(self, state: Mapping[str, Any]) -> str:
        shown = _typed(state)
        return self._described(state, f'<span style="{_INPUT}">{shown}</span>')

    def _textarea(self, state: Mapping[str, Any]) -> str:
        shown = _typed(state)
        box = f'<span style="{_INPUT}; display: inline-block; white-space: pre">{shown}</span>'
        return self._described(state, box)

    _boundedinttext = _inttext = _boundedfloattext = _floattext = _text

    def _checkbox(self, state: Mapping[str, Any]) -> str:
        checked = " checked" if state.get("value") else ""
        label = html.escape(str(state.get("description", "")))
        return f'<label><input type="checkbox" disabled{checked}> {label}</label>'

    def _dropdown(self, state: Mapping[str, Any]) -> str:
        return self._described(state, f'<span style="{_INPUT}">{self._chosen(state)} ▾</span>')

    def _togglebuttons(self, state: Mapping[str, Any]) -> str:
        labels = [str(x) for x in state.get("_options_labels", [])]
        index = state.get("index")
        buttons = []
        for position, label in enumerate(labels):
            on = "background: #bbb; font-weight: bold" if position == index else ""
            buttons.append(f'<span style="{_BUTTON}; {on}">{html.escape(label)}</span>')
        return self._described(state, " ".join(buttons))

    def _chosen(self, state: Mapping[str, Any]) -> str:
        labels = [str(x) for x in state.get("_options_labels", [])]
        index = state.get("index")
        return html.escape(labels[index]) if isinstance(index, int) and index < len(labels) else ""

    def _described(self, state: Mapping[str, Any], body: str) -> str:
        description = str(state.get("description") or "")
        if not description:
            return body if body.startswith("<div") else f"<div>{body}</div>"
        return f"<div><span style='margin-right: 6px'>{html.escape(description)}</span>{body}</div>"


def _typed(state: Mapping[str, Any]) -> str:
    """A text input's value, or its placeholder in italics when empty."""
    value = state.get("value")
    if value not in (None, ""):
        return html.escape(str(value))
    return f"<i>{html.escape(str(state.get('placeholder') or ''))}</i>"
