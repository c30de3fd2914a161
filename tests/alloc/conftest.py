"""Fixtures for the allocation suite: the integration suite's helpers."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from ssfixtures import *  # noqa: E402,F401,F403
