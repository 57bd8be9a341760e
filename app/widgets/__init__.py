"""The run screen's panes, one module each. Every pane renders from the session view
(`app.state.SessionView`) so it can be rebuilt at any time."""
