"""dualjudge: does an LLM judge favour outputs from its own model family?

A reference implementation of the dual-judge protocol for UK traffic-sign interpretation,
with open vision-language models served by vLLM as systems under test and as judges.
"""

__version__ = "0.1.0"
