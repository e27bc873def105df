"""``conftest.py``'s rule: a test that needs what a run requires may not skip there.

A ``cuda`` test skipped for want of a device is a failure under ``STRUCTPERC_REQUIRE_CUDA=1``,
and a ``realdata`` test skipped for want of the data one under ``STRUCTPERC_REQUIRE_DATA=1``;
without them both skip, with their reasons.  Run by ``pytester`` on a two-test file beside a copy
of the conftest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parent / "conftest.py"
CASES = """
import pytest

@pytest.mark.cuda
@pytest.mark.skipif(True, reason="no device here")
def test_on_the_device():
    pass

@pytest.mark.realdata
def test_on_the_data():
    pytest.skip("no data here")
"""


@pytest.mark.parametrize("required", [False, True])
def test_a_required_test_fails_instead_of_skipping(pytester, monkeypatch, required):
    for env in ("STRUCTPERC_REQUIRE_CUDA", "STRUCTPERC_REQUIRE_DATA"):
        monkeypatch.setenv(env, "1" if required else "0")
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_cases=CASES)
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-rs"
    )
    if required:  # the device's skip is at setup (an error), the data's in the call (a failure)
        result.assert_outcomes(errors=1, failed=1)
        result.stdout.fnmatch_lines(
            [
                "*STRUCTPERC_REQUIRE_CUDA=1, so a cuda test may not skip: no device here*",
                "*STRUCTPERC_REQUIRE_DATA=1, so a realdata test may not skip: no data here*",
            ]
        )
    else:
        result.assert_outcomes(skipped=2)
        result.stdout.fnmatch_lines(["*no device here*", "*no data here*"])
