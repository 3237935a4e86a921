"""In-process engine: transformers `generate`, constrained by Outlines logits processors, batched.

For small models and machines without vLLM (CPU or GPU). Concurrent `generate` calls are gathered
into batches of compatible requests (same constraint and sampling parameters); greedy requests batch
freely, while sampled ones run one at a time under their own seed so every answer is reproducible
whatever else was in flight. Generation runs in a worker thread, so the event loop stays free.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import ModelCard
from dualjudge.inference.settings import OUTLINES_BACKENDS
from dualjudge.inference.types import Constraint, GenerationRequest, GenerationResult
from dualjudge.inference.weights import LocalWeights


@dataclass
class _Pending:
    request: GenerationRequest
    future: asyncio.Future[GenerationResult]


def _batch_key(r: GenerationRequest) -> tuple[Any, ...]:
    s = r.sampling
    sampled = s.temperature > 0
    return (
        r.constraint,
        s.temperature,
        s.top_p,
        s.max_tokens,
        s.seed if sampled else None,
        sampled,
        any(m.image is not None for m in r.messages),
    )


class TransformersEngine:
    """One model loaded in this process."""

    def __init__(
        self,
        card: ModelCard,
        weights: LocalWeights,
        identity: str | None = None,
        *,
        device: str | None = None,
        max_batch: int = 32,
        structured_backend: str = "xgrammar",
    ) -> None:
        import outlines
        import torch
        from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoProcessor, AutoTokenizer

        grammar_backend = OUTLINES_BACKENDS.get(structured_backend)
        if grammar_backend is None:
            raise DualjudgeError(
                f"the in-process engine has no {structured_backend!r} grammar backend; set engine.structured_backend to one "
                f"of {', '.join(OUTLINES_BACKENDS)}"
            )
        self.card = card
        self.model_identity = identity or weights.identity
        self.grammar_backend = grammar_backend
        self.max_batch = max_batch
        self.capacity = max_batch  # requests worth keeping in flight: one batch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.float32 if self.device == "cpu" else torch.bfloat16
        self.multimodal = "image" in card.modalities
        path = str(weights.path)
        try:
            if self.multimodal:
                self.processor = AutoProcessor.from_pretrained(path)  # type: ignore[no-untyped-call]  # an untyped library
                self.tokenizer = self.processor.tokenizer
                self.model = torch.nn.Module.to(AutoModelForImageTextToText.from_pretrained(path, dtype=dtype), self.device).eval()  # type: ignore[no-untyped-call]  # an untyped library
                self._outlines = outlines.from_transformers(self.model, self.processor)
            else:
                self.processor = None
                self.tokenizer = AutoTokenizer.from_pretrained(path)
                self.model = torch.nn.Module.to(AutoModelForCausalLM.from_pretrained(path, dtype=dtype), self.device).eval()  # type: ignore[no-untyped-call]  # an untyped library
                self._outlines = outlines.from_transformers(self.model, self.tokenizer)
        except OSError as e:
            raise DualjudgeError(f"{card.name}: cannot load weights from {path} ({e})") from None
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        template = card.chat_template_path()
        if template is not None:
            self.tokenizer.chat_template = template.read_text()
        self._processors: dict[Constraint, Any] = {}
        self._xgrammar: Any = None
        self._queue: asyncio.Queue[_Pending] | None = None
        self._worker: asyncio.Task[None] | None = None

    # -- public --------------------------------------------------------------------------------
    async def generate(self, request: GenerationRequest) -> GenerationResult:
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._worker = asyncio.get_running_loop().create_task(self._run())
        future: asyncio.Future[GenerationResult] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(request, future))
        return await future

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
            self._worker, self._queue = None, None

    # -- batching ------------------------------------------------------------------------------
    async def _run(self) -> None:
        assert self._queue is not None
        waiting: list[_Pending] = []
        while True:
            if not waiting:
                waiting.append(await self._queue.get())
            await asyncio.sleep(0)  # let concurrent callers enqueue before a batch is cut
            while not self._queue.empty():
                waiting.append(self._queue.get_nowait())
            key = _batch_key(waiting[0].request)
            limit = 1 if waiting[0].request.sampling.temperature > 0 else self.max_batch
            batch = [p for p in waiting if _batch_key(p.request) == key][:limit]
            waiting = [p for p in waiting if p not in batch]
            try:
                results = await asyncio.to_thread(self._generate_batch, [p.request for p in batch])
            except Exception as e:  # an engine failure is reported per request, never raised into the run
                results = [GenerationResult(None, error=f"{type(e).__name__}: {e}") for _ in batch]
            for p, res in zip(batch, results):
                if not p.future.done():
                    p.future.set_result(res)

    def _logits_processor(self, constraint: Constraint | None) -> Any:
        """An Outlines logits processor for the constraint, compiled once and reset per batch."""
        if constraint is None:
            return None
        proc = self._processors.get(constraint)
        if proc is None:
            proc = self._compile(constraint)
            self._processors[constraint] = proc
        proc.reset()
        return proc

    def _compile(self, constraint: Constraint) -> Any:
        if self.grammar_backend == "xgrammar":
            import xgrammar
            from outlines.backends.xgrammar import XGrammarLogitsProcessor

            if self._xgrammar is None:
                # size the token bitmask by the model's logits (padded vocabularies are larger than the tokenizer's)
                vocab = int(self.model.get_output_embeddings().weight.shape[0])
                info = xgrammar.TokenizerInfo.from_huggingface(self.tokenizer, vocab_size=vocab)
                self._xgrammar = xgrammar.GrammarCompiler(info)
            if constraint.kind == "json":
                # compact JSON (no free whitespace, on which weak models loop), as on the vLLM server
                compiled = self._xgrammar.compile_json_schema(constraint.spec, any_whitespace=False)
            else:
                compiled = self._xgrammar.compile_regex(constraint.spec)
            return XGrammarLogitsProcessor(compiled, "torch")
        from outlines.backends import get_json_schema_logits_processor, get_regex_logits_processor

        if constraint.kind == "json":
            return get_json_schema_logits_processor(self.grammar_backend, self._outlines, constraint.spec)
        return get_regex_logits_processor(self.grammar_backend, self._outlines, constraint.spec)

    def _chat(self, request: GenerationRequest) -> list[dict[str, Any]]:
        chat: list[dict[str, Any]] = []
        for m in request.messages:
            if self.multimodal:
                parts: list[dict[str, Any]] = [{"type": "image"}] if m.image is not None else []
                chat.append({"role": m.role, "content": [*parts, {"type": "text", "text": m.text}]})
            else:
                if m.image is not None:
                    raise DualjudgeError(f"{self.card.name} is a text-only model; it cannot take an image")
                chat.append({"role": m.role, "content": m.text})
        return chat

    def _encode(self, requests: list[GenerationRequest]) -> dict[str, Any]:
        templater = self.processor if self.multimodal else self.tokenizer
        prompts = [templater.apply_chat_template(self._chat(r), add_generation_prompt=True, tokenize=False) for r in requests]
        if self.multimodal:
            import io

            from PIL import Image

            images = [
                Image.open(io.BytesIO(m.image.png)).convert("RGB") for r in requests for m in r.messages if m.image is not None
            ]
            inputs = self.processor(text=prompts, images=images or None, return_tensors="pt", padding=True)
        else:
            inputs = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        return {k: v.to(self.device) for k, v in inputs.items()}

    def _generate_batch(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        import torch
        from transformers import LogitsProcessorList

        first = requests[0]
        s = first.sampling
        started = time.perf_counter()
        inputs = self._encode(requests)
        kwargs: dict[str, Any] = {"max_new_tokens": s.max_tokens, "pad_token_id": self.tokenizer.pad_token_id}
        if s.temperature > 0:
            torch.manual_seed(s.seed if s.seed is not None else 0)
            kwargs.update(do_sample=True, temperature=s.temperature, top_p=s.top_p)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        proc = self._logits_processor(first.constraint)
        if proc is not None:
            kwargs["logits_processor"] = LogitsProcessorList([proc])
        with torch.inference_mode():
            out = self.model.generate(**inputs, **kwargs)
        new = out[:, inputs["input_ids"].shape[1] :]
        elapsed = time.perf_counter() - started
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) | {self.tokenizer.eos_token_id}
        results: list[GenerationResult] = []
        for row, req in zip(new.tolist(), requests):
            n, finish = 0, "length"
            for tok in row:
                n += 1
                if tok in eos_ids:
                    finish = "stop"
                    break
            text = self.tokenizer.decode(row[:n], skip_special_tokens=True)
            prompt_tokens = int(inputs["attention_mask"][len(results)].sum())
            results.append(
                GenerationResult(
                    text,
                    finish_reason=finish,
                    prompt_tokens=prompt_tokens,
                    completion_tokens=n,
                    latency_s=elapsed,
                    constraint_kind=req.constraint.kind if req.constraint else None,
                )
            )
        return results
