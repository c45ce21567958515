"""Regenerate the README screenshots: `.venv/bin/python screenshots/make_screenshots.py`.

The pictures come from the same scenes as the snapshot tests (tests/support/tui_scenes.py: a scripted
session with fixed events, clock and GPU samples), so what the README shows is what the tests
check. `--out DIR` writes elsewhere; names after the options pick scenes (default: all).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))


async def shoot(scene, out: Path) -> Path:
    app = scene.app()
    async with app.run_test(size=scene.size) as pilot:
        await scene.run_before(pilot)
        return Path(app.save_screenshot(filename=f"{scene.name}.svg", path=str(out)))


def main() -> None:
    # tests/ is on sys.path only once the lines above ran (at the top it would be E402)
    from support.tui_scenes import SCENES  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder for the SVG files")
    parser.add_argument("scenes", nargs="*", choices=[[], *SCENES], help="scenes to shoot")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    # As in the snapshot tests: a calibration registered on this machine must not show in the
    # pictures; the review card reads labtui's data folder.
    os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="labtui-screenshots-")
    for name in args.scenes or SCENES:
        print(asyncio.run(shoot(SCENES[name], args.out)))


if __name__ == "__main__":
    main()
