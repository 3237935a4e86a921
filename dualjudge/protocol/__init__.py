"""The evaluation protocol: SIGN_TYPE vocabulary and regex, verdict schemas, prompts, systems, judges, probes.

Public API::

    from dualjudge.protocol import SIGN_TYPES, sign_type_pattern, parse_sign_type
    from dualjudge.protocol import QualityVerdict, EquivalenceVerdict, PairwiseVerdict
"""

from dualjudge.protocol.verdicts import EquivalenceVerdict, Outcome, PairwiseVerdict, QualityVerdict, interpret
from dualjudge.protocol.vocabulary import SIGN_TYPES, parse_sign_type, sign_type_pattern

__all__ = [
    "SIGN_TYPES", "sign_type_pattern", "parse_sign_type",
    "QualityVerdict", "EquivalenceVerdict", "PairwiseVerdict", "Outcome", "interpret",
]
