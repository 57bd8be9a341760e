"""The run screen's jobs, one module each; app/screens/run.py composes the panes and routes keys
and messages to these. Each module's functions take the screen (typed for mypy only, so no module
here imports the screen's at run time)."""
