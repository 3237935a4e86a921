"""The sign testbed: catalogue, renderer, occlusion, scene text and the variant builder."""
