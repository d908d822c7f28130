"""The shared settings check: the first failing condition's message, or nothing."""

import pytest

from transformer.config_checks import require_all


def test_the_first_failing_check_names_the_error_and_passing_checks_say_nothing():
    require_all((True, "never raised"), (1 < 2, "nor this"))
    with pytest.raises(ValueError, match="^second$"):
        require_all((True, "first"), (False, "second"), (False, "third"))
