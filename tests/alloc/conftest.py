# SPDX-License-Identifier: MIT
"""Fixtures for the allocation suite: the integration suite's helpers."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from ssfixtures import *  # noqa: E402,F401,F403


@pytest.fixture(scope="session")
def shim():
    path = os.environ.get("SS_ALLOC_SHIM", "")
    if not os.path.exists(path):
        pytest.fail("SS_ALLOC_SHIM does not name the built shim: %r" % path, pytrace=False)
    return path


@pytest.fixture(scope="session")
def ssload():
    path = os.path.join(os.environ.get("SS_BENCH_DIR", ""), "ssload")
    if not os.access(path, os.X_OK):
        pytest.fail("ssload is missing: %r" % path, pytrace=False)
    return path
