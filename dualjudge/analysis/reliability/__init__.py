"""Agreement and reliability: between and within judges (agreement.py), the alternative annotator test
(alt_test.py), the human check (human.py, annotations.py) and a verdict's stability across passes."""
