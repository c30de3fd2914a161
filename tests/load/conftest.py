# SPDX-License-Identifier: MIT
"""Fixtures for the load suite: the integration suite's helpers
(tests/integration/sslib.py, ssfixtures.py) and loadlib.py."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

import ssfixtures  # noqa: E402
from ssfixtures import *  # noqa: E402,F401,F403

import loadlib  # noqa: E402

# A soak test runs for minutes; the watchdog still ends one that hangs.
ssfixtures.TEST_TIME_LIMIT = loadlib.size(ssfixtures.TEST_TIME_LIMIT, 900)
