"""The evaluation protocol: SIGN_TYPE vocabulary and regex, verdict schemas, prompts, systems, judges, probes.

Public API::

    from dualjudge.protocol import SIGN_TYPES, sign_type_pattern, parse_sign_type
    from dualjudge.protocol import QualityVerdict, EquivalenceVerdict, PairwiseVerdict
"""

from dualjudge.protocol.verdicts import EquivalenceVerdict, Outcome, PairwiseVerdict, QualityVerdict, interpret
from dualjudge.protocol.vocabulary import parse_sign_type, sign_type_pattern, sign_types


def __getattr__(name: str) -> object:  # `SIGN_TYPES` reads the catalogue: on first use, never at import
    if name == "SIGN_TYPES":
        return sign_types()
    raise AttributeError(name)


__all__ = [
    "SIGN_TYPES",
    "sign_types",
    "sign_type_pattern",
    "parse_sign_type",
    "QualityVerdict",
    "EquivalenceVerdict",
    "PairwiseVerdict",
    "Outcome",
    "interpret",
]
