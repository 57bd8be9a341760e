"""Replays recorded ncu output for the CPU tests of the counters runner: started where ncu would be,
it writes the next recorded log (REPLAY_NCU_LOGS, separated by os.pathsep) to the --log-file ncu was
given, keeps the arguments it got (REPLAY_NCU_STATE.args), and can sleep (REPLAY_NCU_SLEEP) or exit
with a status and a line on stderr (REPLAY_NCU_EXIT, REPLAY_NCU_STDERR), as ncu passes on the probe's."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path


def main() -> int:
    args = sys.argv[1:]
    state = Path(os.environ["REPLAY_NCU_STATE"])
    runs = int(state.read_text()) if state.exists() else 0
    state.write_text(str(runs + 1))
    Path(f"{state}.args").write_text(json.dumps(args))
    time.sleep(float(os.environ.get("REPLAY_NCU_SLEEP", "0")))
    logs = os.environ["REPLAY_NCU_LOGS"].split(os.pathsep)
    shutil.copy(logs[min(runs, len(logs) - 1)], args[args.index("--log-file") + 1])
    if os.environ.get("REPLAY_NCU_STDERR"):
        print(os.environ["REPLAY_NCU_STDERR"], file=sys.stderr)
    return int(os.environ.get("REPLAY_NCU_EXIT", "0"))


if __name__ == "__main__":
    sys.exit(main())
