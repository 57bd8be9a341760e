"""The candidates pane: a tree of rounds and their candidates, each with a status mark and word
(compiling, wrong, crashed, timed out, correct, best...), its time and the person's decision, and a
filter (`/`). Choosing one shows it in the other panes.

The list holds still: the cursor stays on its candidate while rounds arrive and old ones fold (a
round holding the cursor, the candidate shown or the best never folds), and each round's line says
what it holds (how many, and its fastest), so a folded round is not a blank."""

from __future__ import annotations

from typing import Unpack

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Tree
from textual.widgets.tree import TreeNode

from cuda_llm.app.messages import CandidateChosen
from cuda_llm.app.state import CandidateView, SessionView
from cuda_llm.app.widgets.options import WidgetOptions
from cuda_llm.app.widgets.text import plain
from cuda_llm.engine.core.status import STATUSES
from cuda_llm.engine.fsr.repeats import name_of

# Which theme variable colours each state: a status's from its table, the view's own states beside.
STATE_COLORS = {**{s: info.color for s, info in STATUSES.items()}, "best": "status-best", "no reply": "status-wrong"}
# The decisions, short: the tree's column is narrow and the mark must never be cut.
DECISIONS = {"accepted": "accepted", "rejected": "rejected", "auto-accepted": "auto-accepted"}

FOLLOW = "\0follow"  # a node's data: choosing it follows the session again
# Following the session, the rounds before the last few are folded as new ones come: the tree stays
# readable, and cheap to redraw, over hundreds of rounds (Enter on a round opens it again).
ROUNDS_OPEN = 3


class CandidateTree(Tree[str]):
    def __init__(self, view: SessionView, **kwargs: Unpack[WidgetOptions]) -> None:
        super().__init__("session", data=FOLLOW, **kwargs)
        self.view = view
        self.show_root = False  # the pane's title names the session; the column is for candidates
        self.guide_depth = 2
        self._rounds: dict[int, TreeNode[str]] = {}
        self._leaves: dict[str, TreeNode[str]] = {}
        self._baseline: TreeNode[str] | None = None
        self._labels: dict[str, str] = {}  # what the baseline's leaf shows: redrawn only when it changes
        self._signatures: dict[str, tuple] = {}  # what each candidate's leaf was drawn from
        self._scrolled_to: TreeNode[str] | None = None
        self.filter_text = ""  # shown: candidates whose label, state or decision holds it
        self._round_labels: dict[int, str] = {}  # what each round's line shows
        self._none_match: TreeNode[str] | None = None  # the line saying the filter matches nothing

    def set_filter(self, text: str) -> None:
        """Show only the candidates whose label, state or decision holds `text` (rebuilt)."""
        text = text.strip().lower()
        if text == self.filter_text:
            return
        self.filter_text = text
        self.clear()
        self._rounds, self._leaves, self._baseline, self._labels = {}, {}, None, {}
        self._signatures, self._scrolled_to, self._round_labels = {}, None, {}
        self._none_match = None
        self.root.expand()
        self.show()

    def _shown(self, c: CandidateView) -> bool:
        if not self.filter_text:
            return True
        words = f"{c.label} {self.view.word(c.state)} {c.decision or ''}".lower()
        return self.filter_text in words

    def on_mount(self) -> None:
        self.root.expand()
        self.show()

    def round_label(self, round_: int, members: list[CandidateView]) -> str:
        """`round 3 · 4 · best r3-2 40.1 us`: what the round holds, readable when it is folded."""
        timed = [c for c in members if c.median_us is not None and c.judgement is not None and c.judgement.is_correct]
        fastest = min(timed, key=lambda c: c.median_us or 0.0) if timed else None
        best = f" · fastest {fastest.label} {fastest.median_us:.1f} us" if fastest is not None else ""
        return f"round {round_} · {len(members)}{best}"

    def show(self) -> None:
        view = self.view
        held = self.cursor_node  # the person's place: it must not move under them
        colors = self.app.theme_variables
        if view.baseline is not None and not self.filter_text:
            base = view.baseline
            timing = f" {base.timing.median_us:.1f} us" if base.timing else ""
            mark = "★ " if view.best_label == base.label else "· "
            text = Text(f"{mark}baseline{timing}", style=colors.get("status-compiled", ""))
            if self._baseline is None:
                self._baseline = self.root.add_leaf(text, data=base.label)
            elif self._labels.get(base.label) != text.markup:
                self._baseline.set_label(text)
            self._labels[base.label] = text.markup
        newest: TreeNode[str] | None = None
        all_by_round = view.rounds()
        for round_, all_members in sorted(all_by_round.items()):
            members = [c for c in all_members if self._shown(c)]
            if not members:
                continue
            node = self._rounds.get(round_)
            if node is None:
                node = self.root.add(f"round {round_}", data=FOLLOW, expand=True)
                self._rounds[round_] = node
                old = self._rounds.get(round_ - ROUNDS_OPEN)
                kept = {view.best_label, view.focus, view.marked, held.data if held is not None else None}
                holds = any(c.label in kept for c in all_by_round.get(round_ - ROUNDS_OPEN, ()))
                holds = holds or (held is not None and held is old)
                if view.follow and not self.filter_text and old is not None and not holds:
                    old.collapse()  # (the round of the best stays open: its ★ is what one looks for)
            title = self.round_label(round_, all_members)
            if self._round_labels.get(round_) != title:
                node.set_label(title)
                self._round_labels[round_] = title
            for c in members:
                # What the label depends on: it is rebuilt only when one of these changed (a long
                # session has hundreds of candidates, and most events change one of them).
                best = c.label == view.best_label
                marked = c.label == view.marked
                sig = (
                    view.mark(c),
                    c.state,
                    c.median_us,
                    c.decision,
                    c.label == view.focus,
                    best,
                    marked,
                    self.app.theme,
                )
                leaf = self._leaves.get(c.label)
                if leaf is None:
                    leaf = self._leaves[c.label] = node.add_leaf(self.label_for(c, colors), data=c.label)
                elif self._signatures.get(c.label) != sig:
                    leaf.set_label(self.label_for(c, colors))
                self._signatures[c.label] = sig
                newest = leaf
        self._say_none_match(newest is None and bool(self.filter_text))
        if held is not None:
            # Lines above it may have come or folded: rebuilt now, the cursor is moved back onto its
            # node before the next key reads its line (Tree rebuilds lazily, on idle).
            _ = self._tree_lines
            if self.cursor_node is not held and held.tree is self:
                self.move_cursor(held)
        # Following the session: the newest candidate in view (the person scrolls freely otherwise).
        if view.follow and newest is not None and newest is not self._scrolled_to:
            self._scrolled_to = newest
            self.call_after_refresh(self.scroll_to_node, newest, False)  # once the tree has its lines

    def label_for(self, c: CandidateView, colors: dict[str, str]) -> Text:
        """`★ r1-2 40.0 us best · accepted`, `✗ r1-1 compile error`, `✓ r1-2 correct (repeats r1-1)`: the
        mark, the label, then what matters most first (a time says the kernel is correct, so "correct"
        is left out)."""
        view = self.view
        best = c.label == view.best_label and c.judgement is not None and c.judgement.is_correct
        state = "best" if best else c.state
        style = colors.get(STATE_COLORS.get(state, "status-pending"), "")
        text = Text(f"{view.mark(c)} ", style=style)
        text.append_text(plain(c.label, style="bold underline" if c.label == view.focus else "bold"))
        if c.median_us is not None:
            text.append(f" {c.median_us:.1f} us")
        words = "" if c.state == "correct" and c.median_us is not None else view.word(c.state)
        words += " best" if best else ""
        if words.strip():
            text.append(f" {words.strip()}", style=style)
        if c.judgement is not None and c.judgement.repeat_of is not None:
            text.append(f" (repeats {name_of(c.judgement.repeat_of)})", style="italic")
        if c.decision:
            text.append(f" · {DECISIONS.get(c.decision, c.decision)}", style="italic")
        if c.label == view.marked:
            text.append(" ◆ marked", style="bold")
        return text

    def _say_none_match(self, none: bool) -> None:
        """A filter that matches nothing says so, with the way back, rather than leave the pane blank."""
        if none and self._none_match is None:
            self._none_match = self.root.add_leaf(f"no candidate matches {self.filter_text!r} · Esc clears the filter")
        elif not none and self._none_match is not None:
            self._none_match.remove()
            self._none_match = None

    def on_tree_node_selected(self, event: Tree.NodeSelected[str]) -> None:
        event.stop()
        if event.node is self._none_match:
            return
        data = event.node.data
        self.post_message(CandidateChosen(None if data in (None, FOLLOW) else data))


class CandidatesPane(Vertical):
    """The candidate tree under its title, with the filter `/` opens."""

    def __init__(self, view: SessionView, **kwargs: Unpack[WidgetOptions]) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.title_key = "6"  # the key that shows this pane (RunScreen sets the one in force)
        self.border_title = "6 candidates"
        self.candidate_tree = CandidateTree(view, id="candidates")
        self.filter_input = Input(placeholder="filter: label, state, decision", id="candidate-filter", compact=True)

    def compose(self) -> ComposeResult:
        yield self.filter_input
        yield self.candidate_tree

    def on_mount(self) -> None:
        self.filter_input.display = False
        self._title()

    def _title(self) -> None:
        view = self.view
        name = f"session {view.session_id}: {view.task}" if view.session_id is not None else "candidates"
        name = f"{self.title_key} {name}"
        follow = " · following" if view.follow else ""
        filtered = f" · filter {self.candidate_tree.filter_text!r}" if self.candidate_tree.filter_text else ""
        self.border_title = plain(name + follow + filtered)

    def focus_target(self) -> Tree:
        return self.candidate_tree

    def show(self) -> None:
        self._title()
        self.candidate_tree.show()

    def open_filter(self) -> None:
        self.filter_input.display = True
        self.filter_input.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.candidate_tree.set_filter(event.value)
        self._title()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value.strip():
            self.filter_input.display = False
        self.candidate_tree.focus()

    def on_key(self, event: events.Key) -> None:
        # Esc clears the filter from its field, and from the tree while one is set (a filter that
        # hides every candidate must not need the field found again to be taken back).
        if event.key == "escape" and (self.filter_input.has_focus or self.candidate_tree.filter_text):
            event.stop()
            self.candidate_tree.set_filter("")
            self._title()
            self.filter_input.value = ""
            self.filter_input.display = False
            self.candidate_tree.focus()
