# SPDX-License-Identifier: MIT
"""Fixtures for the interop suite: the integration suite's helpers
(tests/integration/sslib.py, ssfixtures.py) with real peers."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

from ssfixtures import *  # noqa: E402,F401,F403
