"""The run screen's panes, each declared once: app/panes/spec.py says what a pane declares, one
module here declares each pane, registry.py lists them, layout.py arranges them for the terminal's
size. The widgets themselves are in app/widgets/."""
