# SPDX-License-Identifier: MIT
"""Fixtures for the integration suite: see ssfixtures.py and sslib.py."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ssfixtures import *  # noqa: E402,F401,F403
