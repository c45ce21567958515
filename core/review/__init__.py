"""The reviewer and how far to trust it: the review on the NeurIPS form, the facts a reviewer is
given first, whether a review is about its paper (grounding), the review record (review.json),
measures against human reviewers, the benchmark, calibration and its store, and the fabrication
probe. May import: writeup and every layer below it; the layers are pyproject.toml's import-linter
contract.
"""
