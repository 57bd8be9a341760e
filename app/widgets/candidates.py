"""The candidates tree: rounds and their candidates, each with a status mark and word (compiling,
wrong, crashed, timed out, correct, best...). Choosing one shows it in the other panes."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from cuda_llm.app.messages import CandidateChosen
from cuda_llm.app.state import CandidateView, SessionView

# Which theme variable colours each state.
STATE_COLORS = {
    "correct": "status-correct",
    "best": "status-best",
    "wrong": "status-wrong",
    "compile_error": "status-wrong",
    "format_error": "status-wrong",
    "launch_error": "status-crashed",
    "crashed": "status-crashed",
    "timed_out": "status-crashed",
    "suspect": "status-crashed",
    "compiled": "status-compiled",
    "no reply": "status-wrong",
}

FOLLOW = "\0follow"  # the root's data: choosing it follows the session again


class CandidateTree(Tree[str]):
    def __init__(self, view: SessionView, **kwargs) -> None:
        super().__init__("session", data=FOLLOW, **kwargs)
        self.view = view
        self.border_title = "candidates"
        self.show_root = True
        self.guide_depth = 2
        self._rounds: dict[int, TreeNode[str]] = {}
        self._leaves: dict[str, TreeNode[str]] = {}
        self._baseline: TreeNode[str] | None = None
        self._labels: dict[str, str] = {}  # what each leaf shows: a node is redrawn only when it changes

    def on_mount(self) -> None:
        self.root.expand()
        self.show()

    def show(self) -> None:
        view = self.view
        colors = self.app.theme_variables
        follow = " (following)" if view.follow else ""
        title = f"session {view.session_id}: {view.task}" if view.session_id is not None else "session"
        if self._labels.get("\0root") != title + follow:
            self._labels["\0root"] = title + follow
            self.root.set_label(Text(title + follow, style="bold"))
        if view.baseline is not None:
            base = view.baseline
            timing = f" {base.timing.median_us:.1f} us" if base.timing else ""
            mark = "★ " if view.best_label == base.label else "· "
            text = Text(f"{mark}baseline{timing}", style=colors.get("status-compiled", ""))
            if self._baseline is None:
                self._baseline = self.root.add_leaf(text, data=base.label)
            elif self._labels.get(base.label) != text.markup:
                self._baseline.set_label(text)
            self._labels[base.label] = text.markup
        for round_, members in sorted(view.rounds().items()):
            node = self._rounds.get(round_)
            if node is None:
                node = self.root.add(f"round {round_}", data=FOLLOW, expand=True)
                self._rounds[round_] = node
            for c in members:
                text = self.label_for(c, colors)
                leaf = self._leaves.get(c.label)
                if leaf is None:
                    self._leaves[c.label] = node.add_leaf(text, data=c.label)
                elif self._labels.get(c.label) != text.markup:
                    leaf.set_label(text)
                self._labels[c.label] = text.markup

    def label_for(self, c: CandidateView, colors: dict[str, str]) -> Text:
        view = self.view
        best = c.label == view.best_label and c.judgement is not None and c.judgement.is_correct
        state = "best" if best else c.state
        style = colors.get(STATE_COLORS.get(state, "status-pending"), "")
        words = view.word(c.state) + (" best" if best else "")
        text = Text(f"{view.mark(c)} ", style=style)
        text.append(c.label, style="bold underline" if c.label == view.focus else "bold")
        text.append(f" {words}", style=style)
        if c.median_us is not None:
            text.append(f" {c.median_us:.1f} us")
        if c.decision:
            text.append(f" · {c.decision}", style="italic")
        return text

    def on_tree_node_selected(self, event: Tree.NodeSelected[str]) -> None:
        event.stop()
        data = event.node.data
        self.post_message(CandidateChosen(None if data in (None, FOLLOW) else data))
