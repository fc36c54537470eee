"""The paper's code listings are verbatim excerpts of the sources: a change to the code that
makes one stale must fail here, not only at `make paper`."""
import importlib.util

from helpers import REPO_ROOT


def test_paper_listings_match_the_sources():
    spec = importlib.util.spec_from_file_location("paper_numbers", REPO_ROOT / "paper" / "numbers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    problems = module.check_listings(REPO_ROOT / "paper" / "paper.tex")
    assert problems == [], "\n".join(problems)
