"""Versions as the engines spell them: release candidates, post-releases, dev builds."""

from __future__ import annotations

import pytest

from llm_inventory.engine.serving import era_of, get, release
from llm_inventory.errors import InputError


@pytest.mark.parametrize(("spelled", "plain"), [
    ("sglang@0.5.10.post1", "sglang@0.5.10"),
    ("trtllm@1.3.0rc1", "trtllm@1.3.0"),
    ("trtllm@1.0.0rc4", "trtllm@1.0.0"),
    ("vllm@0.11.0rc2", "vllm@0.11.0"),
    ("vllm@v0.10.1.dev3+g1234abc", "vllm@0.10.1"),
    ("sglang@0.4.10.post2", "sglang@0.4.10"),
])
def test_a_tagged_release_answers_as_its_release(spelled: str, plain: str) -> None:
    tagged, untagged = get(spelled), get(plain)
    assert era_of(tagged) == era_of(untagged)
    assert tagged.version == untagged.version
    assert tagged.label == untagged.label


def test_release_strips_only_the_tag() -> None:
    assert release("0.5.10.post1") == "0.5.10"
    assert release("1.3.0rc1") == "1.3.0"
    assert release("b8000") == "8000"
    assert release("0.19") == "0.19"


@pytest.mark.parametrize("bad", ["vllm@abc", "vllm@0.11.x", "vllm@0.11.0-beta", "sglang@rc1"])
def test_a_version_that_is_no_release_is_refused(bad: str) -> None:
    with pytest.raises(InputError, match="not a dotted number"):
        get(bad)
